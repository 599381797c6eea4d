"""Request and response parts for compaction strategies, pinned facts and clearing."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.limits import MAX_TOKENS
from app.api.schemas.names import (
    DEFAULT_STRATEGY,
    STRATEGY_DESCRIPTION,
    AppliedStep,
    Strategy,
)
from app.api.schemas.strict import StrictBody

__all__ = [
    "DEFAULT_STRATEGY",
    "PINNED_DESCRIPTION",
    "STRATEGY_DESCRIPTION",
    "AppliedStep",
    "ClearIn",
    "ClearedToolUseOut",
    "FactKindName",
    "PinnedText",
    "RestoredFactOut",
    "Strategy",
]

FactKindName = Literal[
    "goal", "constraint", "fact", "pinned", "file_read", "file_modified", "error"
]
PinnedText = Annotated[str, Field(min_length=1, max_length=4_000)]
PINNED_DESCRIPTION = (
    "Facts every summary must keep verbatim (added back if the summarizer dropped them)."
)


class ClearIn(StrictBody):
    """How tool results are cleared (strategies clear_tool_results and auto)."""

    model_config = ConfigDict(extra="forbid")

    trigger: int | None = Field(
        default=None,
        gt=0,
        le=MAX_TOKENS,
        description="Clear when the history is above this many tokens; default: the threshold.",
    )
    keep: int = Field(default=3, ge=0, le=100_000, description="Newest tool uses never cleared.")
    clear_at_least: int = Field(
        default=0,
        ge=0,
        le=MAX_TOKENS,
        description="Clear nothing unless at least this many tokens are saved.",
    )
    exclude_tools: list[Annotated[str, Field(max_length=200)]] = Field(
        default_factory=list, max_length=1_000, description="Tool names never cleared."
    )
    clear_tool_inputs: bool = Field(
        default=False, description="Also replace the arguments of the cleared calls."
    )


class RestoredFactOut(BaseModel):
    """A pinned fact the summarizer left out, added back into its section."""

    kind: FactKindName
    text: str


class ClearedToolUseOut(BaseModel):
    """A tool use whose result (and maybe input) was replaced by a placeholder."""

    tool_call_id: str
    tool_name: str
    placeholder: str
    input_cleared: bool
    tokens_saved: int
