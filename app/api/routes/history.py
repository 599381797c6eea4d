"""Stateless endpoints: estimate a history, compact a history."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from app.api.deps import Compaction, Estimation
from app.api.disconnect import run_until_disconnect
from app.api.mappers.history import compact_options, compact_out, estimate_out, history_input
from app.api.problems import documented
from app.api.routing import OrjsonRoute, answer_off_loop
from app.api.schemas.history import CompactIn, CompactOut, EstimateIn, EstimateOut
from app.engine.errors import IneffectiveCompactionError, InvalidHistoryError, SummarizerError

router = APIRouter(tags=["history"], route_class=OrjsonRoute)

_ESTIMATE_ERRORS = documented(InvalidHistoryError)
_COMPACT_ERRORS = documented(InvalidHistoryError, IneffectiveCompactionError, SummarizerError)


@router.post("/estimate", response_model=EstimateOut, responses=_ESTIMATE_ERRORS)
def estimate(body: EstimateIn, estimation: Estimation) -> EstimateOut:
    """Count a history's tokens and say whether it must be compacted before the next call."""
    return estimate_out(estimation.count(history_input(body)))


@router.post(
    "/compact",
    response_model=CompactOut,
    responses=_COMPACT_ERRORS,
)
async def compact(body: CompactIn, request: Request, compaction: Compaction) -> Response:
    """Fold the older part of a history into one summary message, keep the recent part."""
    history, options = history_input(body), compact_options(body)
    # A client that disconnects cancels the compaction, and with it the model call.
    outcome = await run_until_disconnect(
        request, lambda caller_gone: compaction.compact(history, options, caller_gone)
    )
    return await answer_off_loop(lambda: compact_out(body, outcome))
