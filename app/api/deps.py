"""FastAPI dependencies as `Annotated` aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.api.problems import ApiError
from app.api.state import AppState
from app.services.compaction import CompactionService
from app.services.estimation import EstimationService
from app.services.native.services import NativeServices
from app.services.sessions.service import SessionService
from app.services.system_prompt import SystemPromptService


def get_state(request: Request) -> AppState:
    """The state the lifespan built (`LifespanState.compactor`)."""
    state: AppState | None = getattr(request.state, "compactor", None)
    if state is None:
        raise ApiError(
            503,
            "Not started",
            "the service has not started: run the app with its lifespan",
            "not-started",
        )
    return state


def get_estimation(request: Request) -> EstimationService:
    return get_state(request).estimation


def get_compaction(request: Request) -> CompactionService:
    return get_state(request).compaction


def get_sessions(request: Request) -> SessionService:
    return get_state(request).sessions


def get_system_prompts(request: Request) -> SystemPromptService:
    return get_state(request).system_prompts


def get_native(request: Request) -> NativeServices:
    return get_state(request).native


State = Annotated[AppState, Depends(get_state)]
Estimation = Annotated[EstimationService, Depends(get_estimation)]
Compaction = Annotated[CompactionService, Depends(get_compaction)]
Sessions = Annotated[SessionService, Depends(get_sessions)]
SystemPrompts = Annotated[SystemPromptService, Depends(get_system_prompts)]
Native = Annotated[NativeServices, Depends(get_native)]
