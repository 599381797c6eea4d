"""Mappers for strategies, pinned facts and cleared tool uses (HTTP ↔ engine values)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict

from app.api.schemas.strategy import ClearedToolUseOut, ClearIn, RestoredFactOut
from app.engine.clearing import ClearedToolUse, ClearSettings
from app.engine.compaction.pinned import PinnedFact
from app.engine.compaction.strategy import StrategyName


def strategy_name(name: str | None) -> StrategyName | None:
    """The strategy a request names (already one of the registered names), or None."""
    return StrategyName(name) if name is not None else None


# The `clear` object and the engine's ClearSettings have the same fields, by name: a
# field added to one and not the other fails here, loudly, on the first request. The one
# exception is `step_tokens`, the emulated native edit's cache-aware step (not an HTTP
# setting of the REST strategies).
_ENGINE_ONLY = ("step_tokens",)


def clear_in(clear: ClearSettings) -> ClearIn:
    """The `clear` object of an answer, from engine clearing settings."""
    fields = {k: v for k, v in asdict(clear).items() if k not in _ENGINE_ONLY}
    return ClearIn.model_validate({**fields, "exclude_tools": list(clear.exclude_tools)})


def clear_settings(clear: ClearIn) -> ClearSettings:
    """Engine clearing settings from the request's `clear` object."""
    return ClearSettings(**{**clear.model_dump(), "exclude_tools": tuple(clear.exclude_tools)})


def restored_out(facts: Iterable[PinnedFact]) -> list[RestoredFactOut]:
    return [RestoredFactOut(kind=f.kind.value, text=f.text) for f in facts]


def cleared_out(cleared: Iterable[ClearedToolUse]) -> list[ClearedToolUseOut]:
    # The answer is the engine's ClearedToolUse as it reads (`input_cleared` is its
    # property), without the placeholder input itself.
    return [ClearedToolUseOut.model_validate(c, from_attributes=True) for c in cleared]
