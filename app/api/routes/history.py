"""Stateless endpoints: estimate a history, compact a history."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request

from app.api.deps import Compaction, Estimation
from app.api.mappers import compact_options, compact_out, estimate_out, history_input
from app.api.problems import Problem
from app.api.schemas import CompactIn, CompactOut, EstimateIn, EstimateOut

router = APIRouter(tags=["history"])

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


@router.post("/compact", response_model=CompactOut, responses={**_ERRORS, **_SUMMARIZER_ERRORS})
async def compact(body: CompactIn, request: Request, compaction: Compaction) -> CompactOut:
    """Fold the older part of a history into one summary message, keep the recent part."""
    gone = asyncio.Event()
    watcher = asyncio.create_task(_watch_disconnect(request, gone))
    try:
        outcome = await compaction.compact(
            history_input(body), compact_options(body), caller_gone=gone.is_set
        )
    finally:
        watcher.cancel()
    return compact_out(body, outcome)


async def _watch_disconnect(request: Request, gone: asyncio.Event) -> None:
    """Sets `gone` when the client disconnects, so retries are not started for nobody."""
    while not gone.is_set():
        if await request.is_disconnected():
            gone.set()
            return
        await asyncio.sleep(0.25)
