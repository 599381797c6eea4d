"""Stateless endpoints: estimate a history, compact a history."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request

from app.api.deps import Compaction, Estimation
from app.api.mappers import compact_options, compact_out, estimate_out, history_input
from app.api.problems import Problem
from app.api.schemas import CompactIn, CompactOut, EstimateIn, EstimateOut
from app.engine.errors import CallerGoneError

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
    work = asyncio.create_task(
        compaction.compact(history_input(body), compact_options(body), caller_gone=gone.is_set)
    )
    watcher = asyncio.create_task(_watch_disconnect(request, gone, work))
    try:
        outcome = await work
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if gone.is_set() and current is not None and current.cancelling() == 0:
            # The watcher cancelled the work, not the server: nobody waits for an answer.
            raise CallerGoneError("the client disconnected; the compaction was cancelled") from None
        raise
    finally:
        watcher.cancel()
        work.cancel()
    return compact_out(body, outcome)


async def _watch_disconnect(request: Request, gone: asyncio.Event, work: asyncio.Task[Any]) -> None:
    """On client disconnect, sets `gone` and cancels the work (and so the model call)."""
    while not work.done():
        if await request.is_disconnected():
            gone.set()
            work.cancel()
            return
        await asyncio.sleep(0.25)
