"""Typed answers of the API, parsed from JSON with checks (a wrong shape is an error)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Format = Literal["openai", "anthropic"]
Message = dict[str, Any]
"""One message exactly as the wire format has it (Chat Completions or Messages API)."""


class MalformedAnswerError(ValueError):
    """A field of an answer is missing or has the wrong type."""


def _field(raw: dict[str, Any], key: str, kind: type) -> Any:
    if key not in raw:
        raise MalformedAnswerError(f"the answer has no {key!r}")
    value = raw[key]
    # bool is an int in Python; a count must not be a flag.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise MalformedAnswerError(f"{key!r} is {type(value).__name__}, not as documented")
    return value


def _int(raw: dict[str, Any], key: str) -> int:
    value: int = _field(raw, key, int)
    return value


def _opt_int(raw: dict[str, Any], key: str) -> int | None:
    return None if raw.get(key) is None else _int(raw, key)


def _int_or(raw: dict[str, Any], key: str, default: int) -> int:
    return default if raw.get(key) is None else _int(raw, key)


def _str(raw: dict[str, Any], key: str) -> str:
    value: str = _field(raw, key, str)
    return value


def _opt_str(raw: dict[str, Any], key: str) -> str | None:
    return None if raw.get(key) is None else _str(raw, key)


def _bool(raw: dict[str, Any], key: str) -> bool:
    value: bool = _field(raw, key, bool)
    return value


def _bool_or(raw: dict[str, Any], key: str, default: bool) -> bool:
    return default if raw.get(key) is None else _bool(raw, key)


def _object(raw: dict[str, Any], key: str) -> dict[str, Any]:
    value: dict[str, Any] = _field(raw, key, dict)
    return value


def _opt_object(raw: dict[str, Any], key: str) -> dict[str, Any] | None:
    return None if raw.get(key) is None else _object(raw, key)


def _list(raw: dict[str, Any], key: str) -> list[Any]:
    value: list[Any] = _field(raw, key, list)
    return value


def _objects(raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
    items = _list(raw, key)
    if not all(isinstance(item, dict) for item in items):
        raise MalformedAnswerError(f"{key!r} holds something that is not a JSON object")
    return items


def _system(raw: dict[str, Any]) -> str | list[dict[str, Any]] | None:
    value = raw.get("system")
    if value is None or isinstance(value, str | list):
        return value
    raise MalformedAnswerError("'system' is neither text, blocks nor null")


def _format(raw: dict[str, Any], key: str = "format") -> Format:
    value = _str(raw, key)
    if value == "openai" or value == "anthropic":
        return value
    raise MalformedAnswerError(f"{key!r} is {value!r}, not openai or anthropic")


def _datetime(raw: dict[str, Any], key: str) -> datetime:
    try:
        return datetime.fromisoformat(_str(raw, key))
    except ValueError as exc:
        raise MalformedAnswerError(f"{key!r} is not an ISO 8601 time") from exc


def _raw() -> Any:
    return field(repr=False, compare=False)


@dataclass(frozen=True)
class Health:
    """GET /healthz: the process is up."""

    status: str
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Health:
        return cls(status=_str(raw, "status"), raw=raw)


@dataclass(frozen=True)
class Readiness:
    """GET /readyz: tokenizers loaded, database reachable with its schema."""

    status: str
    tokenizers: list[str]
    summarizer: str
    database: str
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Readiness:
        return cls(
            status=_str(raw, "status"),
            tokenizers=[str(name) for name in _list(raw, "tokenizers")],
            summarizer=_str(raw, "summarizer"),
            database=_str(raw, "database"),
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
        return cls(_int(raw, "system"), _int(raw, "tools"), _int(raw, "messages"))


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
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Estimate:
        per_message = _list(raw, "per_message")
        if not all(isinstance(n, int) for n in per_message):
            raise MalformedAnswerError("'per_message' holds something that is not a count")
        return cls(
            tokens=_int(raw, "tokens"),
            method=_str(raw, "method"),
            exact=_bool(raw, "exact"),
            encoding=_str(raw, "encoding"),
            model=_opt_str(raw, "model"),
            breakdown=Breakdown.parse(_object(raw, "breakdown")),
            per_message=per_message,
            context_window=_int(raw, "context_window"),
            reserve_tokens=_int(raw, "reserve_tokens"),
            threshold=_int(raw, "threshold"),
            should_compact=_bool(raw, "should_compact"),
            usage_anchor_index=_opt_int(raw, "usage_anchor_index"),
            estimate_floor=_int_or(raw, "estimate_floor", 0),
            raw=raw,
        )


@dataclass(frozen=True)
class SummarizerInfo:
    """Which summarizer wrote a summary, at which thinking level, in how many attempts."""

    provider: str
    model: str
    thinking: str
    attempts: int
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SummarizerInfo:
        return cls(
            provider=_str(raw, "provider"),
            model=_str(raw, "model"),
            thinking=_str(raw, "thinking"),
            attempts=_int(raw, "attempts"),
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
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> CompactResult:
        summarizer = _opt_object(raw, "summarizer")
        return cls(
            compacted=_bool(raw, "compacted"),
            reason=_opt_str(raw, "reason"),
            format=_format(raw),
            messages=_objects(raw, "messages"),
            system=_system(raw),
            tools=_objects(raw, "tools"),
            summary=_opt_str(raw, "summary"),
            updated_previous_summary=_bool_or(raw, "updated_previous_summary", False),
            cut_index=_opt_int(raw, "cut_index"),
            summarized_messages=_int(raw, "summarized_messages"),
            tokens_before=_int(raw, "tokens_before"),
            tokens_after=_int(raw, "tokens_after"),
            estimate_floor=_int(raw, "estimate_floor"),
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
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SystemPrompt:
        sources = [
            SystemPromptSource(_str(s, "kind"), _opt_str(s, "path"), _int(s, "tokens"))
            for s in _objects(raw, "sources")
        ]
        return cls(
            system=_str(raw, "system"),
            sources=sources,
            tokens=_int(raw, "tokens"),
            encoding=_str(raw, "encoding"),
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
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Session:
        return cls(
            id=_str(raw, "id"),
            model=_opt_str(raw, "model"),
            format=None if raw.get("format") is None else _format(raw),
            system=_system(raw),
            tools=_objects(raw, "tools"),
            context_window=_opt_int(raw, "context_window"),
            reserve_tokens=_opt_int(raw, "reserve_tokens"),
            trigger_tokens=_opt_int(raw, "trigger_tokens"),
            keep_recent_tokens=_opt_int(raw, "keep_recent_tokens"),
            thinking=_opt_str(raw, "thinking"),
            metadata=_object(raw, "metadata"),
            message_count=_int(raw, "message_count"),
            compaction_count=_int(raw, "compaction_count"),
            created_at=_datetime(raw, "created_at"),
            raw=raw,
        )


@dataclass(frozen=True)
class SessionPage:
    """GET /sessions: one page of the caller's sessions, newest first."""

    sessions: list[Session]
    total: int
    offset: int
    limit: int
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SessionPage:
        return cls(
            sessions=[Session.parse(s) for s in _objects(raw, "sessions")],
            total=_int(raw, "total"),
            offset=_int(raw, "offset"),
            limit=_int(raw, "limit"),
            raw=raw,
        )


@dataclass(frozen=True)
class AppendResult:
    """POST /sessions/{id}/messages: how many were appended, at which sequence numbers."""

    appended: int
    first_seq: int | None
    last_seq: int | None
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> AppendResult:
        return cls(
            appended=_int(raw, "appended"),
            first_seq=_opt_int(raw, "first_seq"),
            last_seq=_opt_int(raw, "last_seq"),
            raw=raw,
        )


@dataclass(frozen=True)
class Transcript:
    """GET /sessions/{id}/transcript: original messages exactly as received, in order."""

    messages: list[Message]
    total: int
    offset: int
    limit: int
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Transcript:
        return cls(
            messages=_objects(raw, "messages"),
            total=_int(raw, "total"),
            offset=_int(raw, "offset"),
            limit=_int(raw, "limit"),
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
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Context:
        return cls(
            format=_format(raw),
            system=_system(raw),
            tools=_objects(raw, "tools"),
            messages=_objects(raw, "messages"),
            estimate=Estimate.parse(_object(raw, "estimate")),
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
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> CompactionRecord:
        return cls(
            id=_str(raw, "id"),
            created_at=_datetime(raw, "created_at"),
            trigger=_str(raw, "trigger"),
            summary=_str(raw, "summary"),
            first_kept_seq=_int(raw, "first_kept_seq"),
            tokens_before=_int(raw, "tokens_before"),
            tokens_after=_int(raw, "tokens_after"),
            summarizer=SummarizerInfo.parse(_object(raw, "summarizer")),
            instructions=_opt_str(raw, "instructions"),
            previous_id=_opt_str(raw, "previous_id"),
            raw=raw,
        )


@dataclass(frozen=True)
class PrepareResult:
    """POST /sessions/{id}/prepare and /compact: whether it compacted, and the context."""

    compacted: bool
    reason: str | None
    compaction: CompactionRecord | None
    context: Context
    raw: dict[str, Any] = _raw()

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> PrepareResult:
        compaction = _opt_object(raw, "compaction")
        return cls(
            compacted=_bool(raw, "compacted"),
            reason=_opt_str(raw, "reason"),
            compaction=None if compaction is None else CompactionRecord.parse(compaction),
            context=Context.parse(_object(raw, "context")),
            raw=raw,
        )


def parse_compactions(raw: dict[str, Any]) -> list[CompactionRecord]:
    """GET /sessions/{id}/compactions, oldest first."""
    return [CompactionRecord.parse(c) for c in _objects(raw, "compactions")]
