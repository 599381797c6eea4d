"""Request and response bodies of the stateless endpoints (the HTTP contract)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.limits import MAX_MESSAGES, MAX_TOKENS
from app.api.schemas.strategy import (
    PINNED_DESCRIPTION,
    STRATEGY_DESCRIPTION,
    AppliedStep,
    ClearedToolUseOut,
    ClearIn,
    PinnedText,
    RestoredFactOut,
    Strategy,
)
from app.engine.thinking import ThinkingLevel

Format = Literal["openai", "anthropic", "responses"]
TokenizerName = Literal["auto", "o200k_base", "cl100k_base", "chars/4"]


class UsageIn(BaseModel):
    """A provider usage report for the reply at `message_index`."""

    model_config = ConfigDict(extra="forbid")

    message_index: int = Field(ge=0, le=MAX_MESSAGES)
    input_tokens: int = Field(default=0, ge=0, le=MAX_TOKENS)
    output_tokens: int = Field(default=0, ge=0, le=MAX_TOKENS)
    cache_read_input_tokens: int = Field(default=0, ge=0, le=MAX_TOKENS)
    cache_creation_input_tokens: int = Field(default=0, ge=0, le=MAX_TOKENS)


class HistoryIn(BaseModel):
    """A history in either wire format, with the settings that apply to it."""

    # Callers often forward their whole provider request body (model, max_tokens, ...);
    # fields we do not use are accepted and ignored rather than refused.
    model_config = ConfigDict(extra="ignore")

    messages: list[dict[str, Any]] = Field(
        max_length=100_000, description="Chat Completions or Messages API messages, unchanged."
    )
    format: Format | None = Field(default=None, description="Detected when omitted.")
    system: str | list[dict[str, Any]] | None = Field(
        default=None, description="Top-level system prompt (Anthropic style)."
    )
    tools: list[dict[str, Any]] = Field(default_factory=list)
    functions: list[dict[str, Any]] = Field(
        default_factory=list, description="Deprecated Chat Completions functions; counted."
    )
    tool_choice: str | dict[str, Any] | None = Field(
        default=None, description="Counted: `none` and a named function cost tokens."
    )
    function_call: str | dict[str, Any] | None = Field(
        default=None, description="Deprecated request-level form of tool_choice."
    )
    model: str | None = Field(default=None, max_length=200)
    context_window: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    reserve_tokens: int | None = Field(default=None, ge=0, le=MAX_TOKENS)
    trigger_tokens: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    tokenizer: TokenizerName = "auto"
    usage: list[UsageIn] = Field(default_factory=list)
    estimate_floor: int = Field(default=0, ge=0, le=MAX_MESSAGES)


class EstimateIn(HistoryIn):
    """Body of POST /estimate."""


class CompactIn(HistoryIn):
    """Body of POST /compact."""

    keep_recent_tokens: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    force: bool = Field(default=False, description="Compact even under the threshold.")
    instructions: str | None = Field(default=None, max_length=20_000)
    thinking: ThinkingLevel | None = Field(
        default=None, description="Thinking level the summarizer starts at."
    )
    strategy: Strategy = Field(default="summarize", description=STRATEGY_DESCRIPTION)
    clear: ClearIn = Field(default_factory=ClearIn)
    pinned: list[PinnedText] = Field(
        default_factory=list, max_length=200, description=PINNED_DESCRIPTION
    )


class Breakdown(BaseModel):
    system: int
    tools: int
    messages: int
    estimated: list[str] = Field(
        default_factory=list,
        description=(
            "Parts counted by a guess, not a published or API-confirmed rule: tokenizer "
            "(an approximate encoding for this model), framing (the wire format's framing "
            "is unpublished), images, tool_calls, tool_results, thinking, blocks, tools. "
            "Empty when `exact` is true (and the estimate is not usage-anchored)."
        ),
    )


class EstimateOut(BaseModel):
    """Token estimate and compaction decision."""

    tokens: int
    method: str = Field(description="tokenizer | heuristic, prefixed usage+ when anchored.")
    exact: bool
    encoding: str
    model: str | None
    breakdown: Breakdown
    per_message: list[int]
    context_window: int
    reserve_tokens: int
    threshold: int
    should_compact: bool
    usage_anchor_index: int | None = None
    estimate_floor: int = 0


class SummarizerOut(BaseModel):
    provider: str
    model: str
    thinking: ThinkingLevel
    attempts: int
    chunks: int = 1
    input_tokens: int = 0
    output_tokens: int = 0


class CompactOut(BaseModel):
    """A compacted history, or the reason nothing was compacted."""

    compacted: bool
    reason: str | None = None
    format: Format
    messages: list[dict[str, Any]]
    system: str | list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]]
    summary: str | None = None
    updated_previous_summary: bool = False
    cut_index: int | None = None
    summarized_messages: int = 0
    tokens_before: int
    tokens_after: int
    threshold: int
    estimate_floor: int
    summarizer: SummarizerOut | None = None
    strategy: Strategy = "summarize"
    applied: list[AppliedStep] = Field(
        default_factory=list, description="What was done, in order; empty when not compacted."
    )
    restored_facts: list[RestoredFactOut] = Field(
        default_factory=list,
        description="Pinned facts the summarizer left out, added back into the summary.",
    )
    current_request: str | None = Field(
        default=None,
        description="The request of the turn the cut fell inside, quoted in the summary.",
    )
    cleared_tool_uses: list[ClearedToolUseOut] = Field(default_factory=list)
    tokens_cleared: int = 0


class HealthOut(BaseModel):
    status: str


class ReadyOut(BaseModel):
    status: str
    tokenizers: list[str]
    summarizer: str
    database: str
