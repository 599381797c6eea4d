"""FastAPI dependencies as `Annotated` aliases."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, Request

from app.api.problems import ApiError
from app.api.state import AppState
from app.services.native.endpoints import VendorEndpoints
from app.services.sessions.service import SessionService
from app.services.stateless import StatelessHistory
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


async def _state(request: Request) -> AppState:
    return get_state(request)


# Coroutines, not plain functions: FastAPI runs those in its thread pool, a hop to
# another thread and back on every request for work that never blocks.
def _shared(name: str) -> Callable[[Request], Awaitable[Any]]:
    """A dependency handing out one thing the lifespan built (an `AppState` field)."""

    async def dependency(request: Request) -> Any:
        return getattr(get_state(request), name)

    dependency.__name__ = f"get_{name}"
    return dependency


State = Annotated[AppState, Depends(_state)]
Sessions = Annotated[SessionService, Depends(_shared("sessions"))]
SystemPrompts = Annotated[SystemPromptService, Depends(_shared("system_prompts"))]
Stateless = Annotated[StatelessHistory, Depends(_shared("stateless"))]
VendorRoutes = Annotated[VendorEndpoints, Depends(_shared("vendor_endpoints"))]
