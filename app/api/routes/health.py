"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import State
from app.api.problems import ApiError, Problem
from app.api.schemas import HealthOut, ReadyOut

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthOut)
async def healthz() -> HealthOut:
    """The process is up."""
    return HealthOut(status="ok")


@router.get("/readyz", response_model=ReadyOut, responses={503: {"model": Problem}})
async def readyz(state: State) -> ReadyOut:
    """Tokenizers (and, once configured, the database) are ready to serve."""
    if not state.ready:
        raise ApiError(503, "Not ready", "the service is still loading tokenizers", "not-ready")
    return ReadyOut(
        status="ready",
        tokenizers=list(state.tokenizers.loaded),
        summarizer=state.compaction.summarizer.info.provider,
    )
