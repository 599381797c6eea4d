"""Liveness and readiness."""

from __future__ import annotations

import anyio
from fastapi import APIRouter

from app.api.deps import State
from app.api.problems import ApiError, Problem
from app.api.schemas.history import HealthOut, ReadyOut

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthOut)
async def healthz() -> HealthOut:
    """The process is up."""
    return HealthOut(status="ok")


@router.get("/readyz", response_model=ReadyOut, responses={503: {"model": Problem}})
async def readyz(state: State) -> ReadyOut:
    """Tokenizers are loaded and the database answers with its schema in place."""
    if not state.ready:
        raise ApiError(503, "Not ready", "the service is still loading tokenizers", "not-ready")
    problem = await anyio.to_thread.run_sync(state.sessions.check_database)
    if problem is not None:
        raise ApiError(503, "Not ready", f"the session store is not ready: {problem}", "not-ready")
    return ReadyOut(
        status="ready",
        tokenizers=list(state.tokenizers.loaded),
        summarizer=state.compaction.summarizer.info.provider,
        database="ok",
    )
