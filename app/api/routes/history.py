"""Stateless endpoints: estimate a history, compact a history."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from app.api.auth import Tenant
from app.api.deps import Stateless
from app.api.disconnect import run_until_disconnect
from app.api.mappers.history import compact_options, compact_out, estimate_out, history_input
from app.api.problems import documented
from app.api.routing import OrjsonRoute, answer_off_loop
from app.api.schemas.history import CompactIn, CompactOut, EstimateIn, EstimateOut
from app.engine.errors import (
    CompactionStateError,
    IneffectiveCompactionError,
    InvalidHistoryError,
    SummarizerError,
)

router = APIRouter(tags=["history"], route_class=OrjsonRoute)

_ESTIMATE_ERRORS = documented(InvalidHistoryError, CompactionStateError)
_COMPACT_ERRORS = documented(
    InvalidHistoryError, CompactionStateError, IneffectiveCompactionError, SummarizerError
)


@router.post("/estimate", response_model=EstimateOut, responses=_ESTIMATE_ERRORS)
def estimate(body: EstimateIn, stateless: Stateless, tenant: Tenant) -> EstimateOut:
    """Count a history's tokens and say whether it must be compacted before the next call."""
    return estimate_out(stateless.estimate(history_input(body), tenant))


@router.post(
    "/compact",
    response_model=CompactOut,
    responses=_COMPACT_ERRORS,
)
async def compact(
    body: CompactIn, request: Request, stateless: Stateless, tenant: Tenant
) -> Response:
    """Fold the older part of a history into one summary message, keep the recent part."""
    history = history_input(body)
    options = compact_options(body)
    # A client that disconnects cancels the compaction, and with it the model call.
    outcome = await run_until_disconnect(
        request, lambda caller_gone: stateless.compact(history, options, tenant, caller_gone)
    )
    return await answer_off_loop(lambda: compact_out(body, outcome))
