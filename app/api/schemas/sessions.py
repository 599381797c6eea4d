"""Request and response bodies of the session endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.history import CompactionSettingsIn, EstimateOut, SummarizerOut
from app.api.schemas.names import Format
from app.api.schemas.strategy import (
    DEFAULT_STRATEGY,
    PINNED_DESCRIPTION,
    STRATEGY_DESCRIPTION,
    AppliedStep,
    ClearedToolUseOut,
    ClearIn,
    PinnedText,
    RestoredFactOut,
    Strategy,
)
from app.api.schemas.strict import StrictBody
from app.api.schemas.usage import UsageIn
from app.engine.thinking import ThinkingLevel

# A session's own prepare-ahead ratio (SPEC §16), shared by POST and PATCH /sessions.
PrepareAheadRatio = Annotated[float, Field(gt=0, le=1, strict=True)] | Literal["off"]
PREPARE_AHEAD_DESCRIPTION = (
    "Of the threshold, past which the session's next compaction is prepared in the "
    "background (0 < ratio ≤ 1); `off`: never for this session; null: the model's policy "
    "or COMPACTOR_PREPARE_AHEAD_RATIO (which, when `off`, turns it off for every session)."
)


class SessionIn(CompactionSettingsIn):
    """Body of POST /sessions; every field is optional."""

    model_config = ConfigDict(extra="forbid")

    strategy: Strategy | None = Field(default=None, description=STRATEGY_DESCRIPTION)
    clear: ClearIn | None = Field(default=None, description="Tool-result clearing settings.")
    pinned: list[PinnedText] | None = Field(
        default=None, max_length=200, description=PINNED_DESCRIPTION
    )
    prepare_ahead_ratio: PrepareAheadRatio | None = Field(
        default=None, description=PREPARE_AHEAD_DESCRIPTION
    )
    metadata: dict[str, Any] = Field(default_factory=dict)


class SessionOut(BaseModel):
    id: str
    model: str | None
    format: Format | None
    system: str | list[dict[str, Any]] | dict[str, Any] | None
    tools: list[dict[str, Any]]
    context_window: int | None = None
    reserve_tokens: int | None = None
    trigger_tokens: int | None = None
    keep_recent_tokens: int | None = None
    thinking: ThinkingLevel | None = None
    strategy: Strategy = DEFAULT_STRATEGY
    clear: ClearIn | None = None
    pinned: list[str] = Field(default_factory=list)
    prepare_ahead_ratio: float | Literal["off"] | None = Field(
        default=None, description="The session's own; null: the model's or the service's."
    )
    metadata: dict[str, Any]
    message_count: int
    compaction_count: int
    created_at: datetime


class SessionListOut(BaseModel):
    sessions: list[SessionOut]
    total: int
    offset: int
    limit: int


class AppendIn(StrictBody):
    """Body of POST /sessions/{id}/messages."""

    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, Any]] = Field(max_length=10_000)
    usage: list[UsageIn] = Field(
        default_factory=list, description="message_index counts within this batch."
    )


class AppendOut(BaseModel):
    appended: int
    first_seq: int | None
    last_seq: int | None


class TranscriptOut(BaseModel):
    messages: list[dict[str, Any]]
    total: int
    offset: int
    limit: int


class ContextOut(BaseModel):
    format: Format
    system: str | list[dict[str, Any]] | dict[str, Any] | None
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    estimate: EstimateOut


class CompactionOut(BaseModel):
    id: str
    created_at: datetime
    trigger: Literal["auto", "manual", "overflow", "revert"]
    summary: str
    first_kept_seq: int
    tokens_before: int
    tokens_after: int
    summarizer: SummarizerOut
    instructions: str | None
    previous_id: str | None
    strategy: Strategy = DEFAULT_STRATEGY
    applied: list[AppliedStep] = Field(default_factory=list)
    restored_facts: list[RestoredFactOut] = Field(default_factory=list)
    current_request: str | None = None
    cleared_tool_uses: list[ClearedToolUseOut] = Field(
        default_factory=list,
        description="Every tool use cleared in the context after this compaction.",
    )
    reverted_id: str | None = Field(
        default=None, description="A `revert` record: the compaction whose context it undid."
    )


class CompactionListOut(BaseModel):
    compactions: list[CompactionOut]


class FoldedOut(BaseModel):
    """The transcript entries a compaction folds into its summary."""

    from_seq: int
    to_seq: int
    count: int


class PrepareOut(BaseModel):
    compacted: bool
    reason: str | None = None
    compaction: CompactionOut | None
    dry_run: bool = Field(
        default=False,
        description="A preview: `compaction` (id `dry-run`) and `context` are what would be "
        "recorded and sent; nothing was written.",
    )
    folded: FoldedOut | None = Field(
        default=None, description="The entries this compaction folds (none: only cleared)."
    )
    context: ContextOut
    compaction_ineffective: bool = Field(
        default=False,
        description="Automatic compaction cannot bring the context under the threshold; "
        "it is not tried again until new messages arrive.",
    )
    warning: str | None = None


class SessionCompactIn(StrictBody):
    """Body of POST /sessions/{id}/compact."""

    model_config = ConfigDict(extra="forbid")

    reason: Literal["manual", "overflow"] = "manual"
    instructions: str | None = Field(default=None, max_length=20_000)
    thinking: ThinkingLevel | None = None
    strategy: Strategy | None = Field(
        default=None, description="This compaction only; default: the session's strategy."
    )
    dry_run: bool = Field(
        default=False, description="Answer what would be recorded, writing nothing."
    )
