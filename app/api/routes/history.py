"""Stateless endpoints: estimate a history, compact a history."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from app.api.deps import Compaction, Estimation
from app.api.disconnect import run_until_disconnect
from app.api.mappers.history import compact_options, compact_out, estimate_out, history_input
from app.api.problems import Problem
from app.api.routing import OrjsonRoute, answer_off_loop
from app.api.schemas.history import CompactIn, CompactOut, EstimateIn, EstimateOut

router = APIRouter(tags=["history"], route_class=OrjsonRoute)

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Problem, "description": "Malformed JSON"},
    413: {"model": Problem, "description": "Body over the size limit"},
    422: {"model": Problem, "description": "The body or the history is invalid"},
}
_SUMMARIZER_ERRORS: dict[int | str, dict[str, Any]] = {
    502: {"model": Problem, "description": "The summarizer failed or returned a bad summary"},
    503: {"model": Problem, "description": "The summarizer cannot be reached"},
    504: {"model": Problem, "description": "The summarizer timed out"},
}


@router.post("/estimate", response_model=EstimateOut, responses=_ERRORS)
def estimate(body: EstimateIn, estimation: Estimation) -> EstimateOut:
    """Count a history's tokens and say whether it must be compacted before the next call."""
    return estimate_out(estimation.count(history_input(body)))


_COMPACT_ERRORS: dict[int | str, dict[str, Any]] = {
    409: {"model": Problem, "description": "The compacted history would not be smaller"},
}


@router.post(
    "/compact",
    response_model=CompactOut,
    responses={**_ERRORS, **_COMPACT_ERRORS, **_SUMMARIZER_ERRORS},
)
async def compact(body: CompactIn, request: Request, compaction: Compaction) -> Response:
    """Fold the older part of a history into one summary message, keep the recent part."""
    history, options = history_input(body), compact_options(body)
    # A client that disconnects cancels the compaction, and with it the model call.
    outcome = await run_until_disconnect(
        request, lambda caller_gone: compaction.compact(history, options, caller_gone)
    )
    return await answer_off_loop(lambda: compact_out(body, outcome))
