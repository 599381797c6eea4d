"""Bodies of search, preview, revert, fork, settings changes and bundles (SPEC §17)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.limits import MAX_TOKENS
from app.api.schemas.history import NO_NUL
from app.api.schemas.sessions import (
    PREPARE_AHEAD_DESCRIPTION,
    CompactionOut,
    ContextOut,
    PrepareAheadRatio,
)
from app.api.schemas.strategy import STRATEGY_DESCRIPTION, Strategy
from app.api.schemas.strict import StrictBody
from app.engine.thinking import ThinkingLevel

JSON_LINES = "application/x-ndjson"


class SearchHitOut(BaseModel):
    seq: int = Field(description="The entry's sequence number in the transcript.")
    role: str
    snippet: str = Field(description="The matching text, matched words between ** and **.")
    folded: bool = Field(
        description="True when compaction folded the entry away: the context no longer "
        "holds it verbatim (only the summary does)."
    )
    rank: int = Field(description="1 is the best match.")
    score: float = Field(description="Relevance; higher is better (backend-specific scale).")


class SearchOut(BaseModel):
    query: str
    match: Literal["all", "any"] = Field(
        description="all: every word matched; any: no entry held every word, so entries "
        "holding any of them are listed."
    )
    hits: list[SearchHitOut]


class PrepareIn(StrictBody):
    """Body of POST /sessions/{id}/prepare (optional)."""

    model_config = ConfigDict(extra="forbid")

    dry_run: bool = Field(
        default=False, description="Answer what would happen, writing nothing (a preview)."
    )


class SessionPatchIn(StrictBody):
    """Body of PATCH /sessions/{id}: the fields given change (null: back to the default)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, max_length=200, pattern=NO_NUL)
    context_window: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    reserve_tokens: int | None = Field(default=None, ge=0, le=MAX_TOKENS)
    trigger_tokens: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    keep_recent_tokens: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    strategy: Strategy | None = Field(default=None, description=STRATEGY_DESCRIPTION)
    thinking: ThinkingLevel | None = None
    prepare_ahead_ratio: PrepareAheadRatio | None = Field(
        default=None, description=PREPARE_AHEAD_DESCRIPTION
    )


class SettingsChangeOut(BaseModel):
    changed_by: str = Field(description="The tenant whose key made the change.")
    via: Literal["api", "inspector"]
    changes: dict[str, dict[str, Any]] = Field(description="Each changed field: {before, after}.")
    created_at: datetime


class SettingsChangeListOut(BaseModel):
    changes: list[SettingsChangeOut]


class RevertOut(BaseModel):
    compaction: CompactionOut = Field(description="The new record, trigger `revert`.")
    context: ContextOut


class ForkIn(StrictBody):
    """Body of POST /sessions/{id}/fork."""

    model_config = ConfigDict(extra="forbid")

    at_seq: int = Field(
        ge=0, description="The last entry the new session keeps (entries 0..at_seq)."
    )
