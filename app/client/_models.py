"""Typed answers of the API, parsed from JSON with checks (a wrong shape is an error)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from app.client import _fields as f
from app.client._fields import Format, MalformedAnswerError

Message = dict[str, Any]
"""One message exactly as the wire format has it (Chat Completions or Messages API)."""


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
            tokenizers=[str(name) for name in f.array(raw, "tokenizers")],
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

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Breakdown:
        return cls(f.integer(raw, "system"), f.integer(raw, "tools"), f.integer(raw, "messages"))


@dataclass(frozen=True)
class Estimate:
    """A token estimate and the compaction decision (POST /estimate, and in a context)."""

    tokens: int
    method: str
    exact: bool
    encoding: str
    model: str | None
    breakdown: Breakdown
    per_message: list[int]
    context_window: int
    reserve_tokens: int
    threshold: int
    should_compact: bool
    usage_anchor_index: int | None
    estimate_floor: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Estimate:
        per_message = f.array(raw, "per_message")
        if not all(isinstance(n, int) for n in per_message):
            raise MalformedAnswerError("'per_message' holds something that is not a count")
        return cls(
            tokens=f.integer(raw, "tokens"),
            method=f.text(raw, "method"),
            exact=f.flag(raw, "exact"),
            encoding=f.text(raw, "encoding"),
            model=f.opt_text(raw, "model"),
            breakdown=Breakdown.parse(f.obj(raw, "breakdown")),
            per_message=per_message,
            context_window=f.integer(raw, "context_window"),
            reserve_tokens=f.integer(raw, "reserve_tokens"),
            threshold=f.integer(raw, "threshold"),
            should_compact=f.flag(raw, "should_compact"),
            usage_anchor_index=f.opt_integer(raw, "usage_anchor_index"),
            estimate_floor=f.integer_or(raw, "estimate_floor", 0),
            raw=raw,
        )


@dataclass(frozen=True)
class SummarizerInfo:
    """Which summarizer wrote a summary, at which thinking level, in how many attempts."""

    provider: str
    model: str
    thinking: str
    attempts: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SummarizerInfo:
        return cls(
            provider=f.text(raw, "provider"),
            model=f.text(raw, "model"),
            thinking=f.text(raw, "thinking"),
            attempts=f.integer(raw, "attempts"),
            raw=raw,
        )


@dataclass(frozen=True)
class CompactResult:
    """POST /compact: the new history, or why nothing was compacted."""

    compacted: bool
    reason: str | None
    format: Format
    messages: list[Message]
    system: str | list[dict[str, Any]] | None
    tools: list[dict[str, Any]]
    summary: str | None
    updated_previous_summary: bool
    cut_index: int | None
    summarized_messages: int
    tokens_before: int
    tokens_after: int
    estimate_floor: int
    summarizer: SummarizerInfo | None
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
            summarized_messages=f.integer(raw, "summarized_messages"),
            tokens_before=f.integer(raw, "tokens_before"),
            tokens_after=f.integer(raw, "tokens_after"),
            estimate_floor=f.integer(raw, "estimate_floor"),
            summarizer=None if summarizer is None else SummarizerInfo.parse(summarizer),
            raw=raw,
        )


@dataclass(frozen=True)
class SystemPromptSource:
    """One part of an assembled system prompt, in order."""

    kind: str
    path: str | None
    tokens: int


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
        sources = [
            SystemPromptSource(f.text(s, "kind"), f.opt_text(s, "path"), f.integer(s, "tokens"))
            for s in f.objects(raw, "sources")
        ]
        return cls(
            system=f.text(raw, "system"),
            sources=sources,
            tokens=f.integer(raw, "tokens"),
            encoding=f.text(raw, "encoding"),
            raw=raw,
        )


@dataclass(frozen=True)
class Session:
    """A stored session: its settings and how much it holds."""

    id: str
    model: str | None
    format: Format | None
    system: str | list[dict[str, Any]] | None
    tools: list[dict[str, Any]]
    context_window: int | None
    reserve_tokens: int | None
    trigger_tokens: int | None
    keep_recent_tokens: int | None
    thinking: str | None
    metadata: dict[str, Any]
    message_count: int
    compaction_count: int
    created_at: datetime
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Session:
        return cls(
            id=f.text(raw, "id"),
            model=f.opt_text(raw, "model"),
            format=None if raw.get("format") is None else f.wire_format(raw),
            system=f.system(raw),
            tools=f.objects(raw, "tools"),
            context_window=f.opt_integer(raw, "context_window"),
            reserve_tokens=f.opt_integer(raw, "reserve_tokens"),
            trigger_tokens=f.opt_integer(raw, "trigger_tokens"),
            keep_recent_tokens=f.opt_integer(raw, "keep_recent_tokens"),
            thinking=f.opt_text(raw, "thinking"),
            metadata=f.obj(raw, "metadata"),
            message_count=f.integer(raw, "message_count"),
            compaction_count=f.integer(raw, "compaction_count"),
            created_at=f.timestamp(raw, "created_at"),
            raw=raw,
        )


@dataclass(frozen=True)
class SessionPage:
    """GET /sessions: one page of the caller's sessions, newest first."""

    sessions: list[Session]
    total: int
    offset: int
    limit: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SessionPage:
        return cls(
            sessions=[Session.parse(s) for s in f.objects(raw, "sessions")],
            total=f.integer(raw, "total"),
            offset=f.integer(raw, "offset"),
            limit=f.integer(raw, "limit"),
            raw=raw,
        )


@dataclass(frozen=True)
class AppendResult:
    """POST /sessions/{id}/messages: how many were appended, at which sequence numbers."""

    appended: int
    first_seq: int | None
    last_seq: int | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> AppendResult:
        return cls(
            appended=f.integer(raw, "appended"),
            first_seq=f.opt_integer(raw, "first_seq"),
            last_seq=f.opt_integer(raw, "last_seq"),
            raw=raw,
        )


@dataclass(frozen=True)
class Transcript:
    """GET /sessions/{id}/transcript: original messages exactly as received, in order."""

    messages: list[Message]
    total: int
    offset: int
    limit: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Transcript:
        return cls(
            messages=f.objects(raw, "messages"),
            total=f.integer(raw, "total"),
            offset=f.integer(raw, "offset"),
            limit=f.integer(raw, "limit"),
            raw=raw,
        )


@dataclass(frozen=True)
class Context:
    """What to send to the model now: system, tools, messages (summary first), estimate."""

    format: Format
    system: str | list[dict[str, Any]] | None
    tools: list[dict[str, Any]]
    messages: list[Message]
    estimate: Estimate
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Context:
        return cls(
            format=f.wire_format(raw),
            system=f.system(raw),
            tools=f.objects(raw, "tools"),
            messages=f.objects(raw, "messages"),
            estimate=Estimate.parse(f.obj(raw, "estimate")),
            raw=raw,
        )


@dataclass(frozen=True)
class CompactionRecord:
    """One stored compaction of a session."""

    id: str
    created_at: datetime
    trigger: str
    summary: str
    first_kept_seq: int
    tokens_before: int
    tokens_after: int
    summarizer: SummarizerInfo
    instructions: str | None
    previous_id: str | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> CompactionRecord:
        return cls(
            id=f.text(raw, "id"),
            created_at=f.timestamp(raw, "created_at"),
            trigger=f.text(raw, "trigger"),
            summary=f.text(raw, "summary"),
            first_kept_seq=f.integer(raw, "first_kept_seq"),
            tokens_before=f.integer(raw, "tokens_before"),
            tokens_after=f.integer(raw, "tokens_after"),
            summarizer=SummarizerInfo.parse(f.obj(raw, "summarizer")),
            instructions=f.opt_text(raw, "instructions"),
            previous_id=f.opt_text(raw, "previous_id"),
            raw=raw,
        )


@dataclass(frozen=True)
class PrepareResult:
    """POST /sessions/{id}/prepare and /compact: whether it compacted, and the context."""

    compacted: bool
    reason: str | None
    compaction: CompactionRecord | None
    context: Context
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> PrepareResult:
        compaction = f.opt_obj(raw, "compaction")
        return cls(
            compacted=f.flag(raw, "compacted"),
            reason=f.opt_text(raw, "reason"),
            compaction=None if compaction is None else CompactionRecord.parse(compaction),
            context=Context.parse(f.obj(raw, "context")),
            raw=raw,
        )


def parse_compactions(raw: dict[str, Any]) -> list[CompactionRecord]:
    """GET /sessions/{id}/compactions, oldest first."""
    return [CompactionRecord.parse(c) for c in f.objects(raw, "compactions")]
