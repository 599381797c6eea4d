"""Typed answers of the stateless calls, parsed from JSON with checks (a wrong shape is an error).

Every answer is a frozen dataclass; `raw` is the JSON object the service sent, so fields
this client does not know yet stay reachable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from context_compactor import _fields as f
from context_compactor._types import (
    APPLIED_STEPS,
    FACT_KINDS,
    SOURCE_KINDS,
    STRATEGIES,
    THINKING_LEVELS,
    WINDOW_SOURCES,
    AppliedStep,
    FactKind,
    Format,
    SourceKind,
    Strategy,
    ThinkingLevel,
    WindowSource,
)

Message = dict[str, Any]
"""One message exactly as the wire format has it (Chat Completions, Messages, Responses item,
Gemini content)."""

SystemPromptText = str | list[dict[str, Any]] | dict[str, Any] | None
"""A system prompt as the service returns it: text, Anthropic text blocks, a Gemini
`systemInstruction` content, or none."""


@dataclass(frozen=True)
class Health:
    """GET /healthz: the process is up."""

    status: str
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Health:
        return cls(status=f.text(raw, "status"), raw=raw)


@dataclass(frozen=True)
class Readiness:
    """GET /readyz: tokenizers loaded, database reachable with its schema."""

    status: str
    tokenizers: list[str]
    summarizer: str
    database: str
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Readiness:
        return cls(
            status=f.text(raw, "status"),
            tokenizers=f.texts(raw, "tokenizers"),
            summarizer=f.text(raw, "summarizer"),
            database=f.text(raw, "database"),
            raw=raw,
        )


@dataclass(frozen=True)
class Breakdown:
    """Where the tokens are: system prompt, tool definitions, messages."""

    system: int
    tools: int
    messages: int
    estimated: list[str]
    """Parts counted by a guess rather than a published rule (empty when exact)."""

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Breakdown:
        return cls(
            system=f.integer(raw, "system"),
            tools=f.integer(raw, "tools"),
            messages=f.integer(raw, "messages"),
            estimated=f.texts(raw, "estimated"),
        )


@dataclass(frozen=True)
class Estimate:
    """A token estimate and the compaction decision (POST /estimate, and in a context)."""

    tokens: int
    method: str
    exact: bool
    encoding: str
    model: str | None
    model_known: bool
    """False when nothing knows the model name: the window is the request's or the fallback."""
    breakdown: Breakdown
    per_message: list[int]
    context_window: int
    context_window_source: WindowSource
    """Where the window came from: request, config, upstream, registry, alias, fallback."""
    reserve_tokens: int
    threshold: int
    should_compact: bool
    usage_anchor_index: int | None
    estimate_floor: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Estimate:
        return cls(
            tokens=f.integer(raw, "tokens"),
            method=f.text(raw, "method"),
            exact=f.flag(raw, "exact"),
            encoding=f.text(raw, "encoding"),
            model=f.opt_text(raw, "model"),
            model_known=f.flag_or(raw, "model_known", True),
            breakdown=Breakdown.parse(f.obj(raw, "breakdown")),
            per_message=f.integers(raw, "per_message"),
            context_window=f.integer(raw, "context_window"),
            context_window_source=f.one_of_or(
                raw, "context_window_source", WINDOW_SOURCES, "registry"
            ),
            reserve_tokens=f.integer(raw, "reserve_tokens"),
            threshold=f.integer(raw, "threshold"),
            should_compact=f.flag(raw, "should_compact"),
            usage_anchor_index=f.opt_integer(raw, "usage_anchor_index"),
            estimate_floor=f.integer_or(raw, "estimate_floor", 0),
            raw=raw,
        )


@dataclass(frozen=True)
class SummarizerInfo:
    """Which summarizer wrote a summary, at which thinking level, at what cost."""

    provider: str
    model: str
    thinking: ThinkingLevel
    attempts: int
    chunks: int
    input_tokens: int
    output_tokens: int
    # Of input_tokens, what the summarizer's provider read from / wrote to its cache.
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SummarizerInfo:
        return cls(
            provider=f.text(raw, "provider"),
            model=f.text(raw, "model"),
            thinking=f.one_of(raw, "thinking", THINKING_LEVELS),
            attempts=f.integer(raw, "attempts"),
            chunks=f.integer_or(raw, "chunks", 1),
            input_tokens=f.integer_or(raw, "input_tokens", 0),
            output_tokens=f.integer_or(raw, "output_tokens", 0),
            cache_read_tokens=f.integer_or(raw, "cache_read_tokens", 0),
            cache_write_tokens=f.integer_or(raw, "cache_write_tokens", 0),
            raw=raw,
        )


@dataclass(frozen=True)
class ClearedToolUse:
    """One tool result replaced by a placeholder (strategy clear_tool_results or auto)."""

    tool_call_id: str
    tool_name: str
    placeholder: str
    input_cleared: bool
    tokens_saved: int

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> ClearedToolUse:
        return cls(
            tool_call_id=f.text(raw, "tool_call_id"),
            tool_name=f.text(raw, "tool_name"),
            placeholder=f.text(raw, "placeholder"),
            input_cleared=f.flag(raw, "input_cleared"),
            tokens_saved=f.integer(raw, "tokens_saved"),
        )


@dataclass(frozen=True)
class RestoredFact:
    """A fact the summary had dropped and the service put back verbatim."""

    kind: FactKind
    text: str

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> RestoredFact:
        return cls(kind=f.one_of(raw, "kind", FACT_KINDS), text=f.text(raw, "text"))


def cleared_tool_uses(raw: dict[str, Any]) -> list[ClearedToolUse]:
    return [ClearedToolUse.parse(c) for c in f.objects_or_empty(raw, "cleared_tool_uses")]


def restored_facts(raw: dict[str, Any]) -> list[RestoredFact]:
    return [RestoredFact.parse(r) for r in f.objects_or_empty(raw, "restored_facts")]


@dataclass(frozen=True)
class CompactResult:
    """POST /compact: the new history, or why nothing was compacted."""

    compacted: bool
    reason: str | None
    format: Format
    messages: list[Message]
    system: SystemPromptText
    tools: list[dict[str, Any]]
    summary: str | None
    updated_previous_summary: bool
    cut_index: int | None
    summarized_messages: int
    tokens_before: int
    tokens_after: int
    threshold: int
    context_window: int | None
    context_window_source: WindowSource | None
    model_known: bool
    estimate_floor: int
    summarizer: SummarizerInfo | None
    strategy: Strategy
    applied: list[AppliedStep]
    tokens_cleared: int
    cleared_tool_uses: list[ClearedToolUse]
    restored_facts: list[RestoredFact]
    current_request: str | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> CompactResult:
        summarizer = f.opt_obj(raw, "summarizer")
        return cls(
            compacted=f.flag(raw, "compacted"),
            reason=f.opt_text(raw, "reason"),
            format=f.wire_format(raw),
            messages=f.objects(raw, "messages"),
            system=f.system(raw),
            tools=f.objects(raw, "tools"),
            summary=f.opt_text(raw, "summary"),
            updated_previous_summary=f.flag_or(raw, "updated_previous_summary", False),
            cut_index=f.opt_integer(raw, "cut_index"),
            summarized_messages=f.integer_or(raw, "summarized_messages", 0),
            tokens_before=f.integer(raw, "tokens_before"),
            tokens_after=f.integer(raw, "tokens_after"),
            threshold=f.integer(raw, "threshold"),
            context_window=f.opt_integer(raw, "context_window"),
            context_window_source=f.opt_one_of(raw, "context_window_source", WINDOW_SOURCES),
            model_known=f.flag_or(raw, "model_known", True),
            estimate_floor=f.integer(raw, "estimate_floor"),
            summarizer=None if summarizer is None else SummarizerInfo.parse(summarizer),
            strategy=f.one_of_or(raw, "strategy", STRATEGIES, "summarize"),
            applied=f.all_of(raw, "applied", APPLIED_STEPS),
            tokens_cleared=f.integer_or(raw, "tokens_cleared", 0),
            cleared_tool_uses=cleared_tool_uses(raw),
            restored_facts=restored_facts(raw),
            current_request=f.opt_text(raw, "current_request"),
            raw=raw,
        )


@dataclass(frozen=True)
class SystemPromptSource:
    """One part of an assembled system prompt, in order."""

    kind: SourceKind
    path: str | None
    tokens: int
    truncated: bool

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SystemPromptSource:
        return cls(
            kind=f.one_of(raw, "kind", SOURCE_KINDS),
            path=f.opt_text(raw, "path"),
            tokens=f.integer(raw, "tokens"),
            truncated=f.flag_or(raw, "truncated", False),
        )


@dataclass(frozen=True)
class SystemPrompt:
    """POST /context/system: the system prompt to send and where each part came from."""

    system: str
    sources: list[SystemPromptSource]
    tokens: int
    encoding: str
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SystemPrompt:
        return cls(
            system=f.text(raw, "system"),
            sources=[SystemPromptSource.parse(s) for s in f.objects(raw, "sources")],
            tokens=f.integer(raw, "tokens"),
            encoding=f.text(raw, "encoding"),
            raw=raw,
        )
