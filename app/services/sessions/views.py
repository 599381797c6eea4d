"""Frozen, typed views of what the session store holds: what services hand out instead
of ORM rows and JSON columns. The JSON columns are read here, once, and nowhere else."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from app.engine.clearing import DEFAULT_KEEP_TOOL_USES, ClearedToolUse, ClearSettings
from app.engine.thinking import ThinkingLevel
from app.services.clearing import cleared_from_json
from app.store.models import CompactionRow, SessionRow, TranscriptEntryRow

DEFAULT_STRATEGY = "summarize"


def aware(moment: datetime) -> datetime:
    """SQLite hands timestamps back without their zone; they were written in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """A session's compaction settings; None means the service default."""

    context_window: int | None = None
    reserve_tokens: int | None = None
    trigger_tokens: int | None = None
    keep_recent_tokens: int | None = None
    thinking: ThinkingLevel | None = None
    strategy: str | None = None
    clear: ClearSettings | None = None
    pinned: tuple[str, ...] = ()

    @property
    def effective_strategy(self) -> str:
        return self.strategy or DEFAULT_STRATEGY

    @property
    def effective_clear(self) -> ClearSettings:
        return self.clear or ClearSettings()

    @classmethod
    def from_json(cls, stored: Mapping[str, Any] | None) -> SessionSettings:
        stored = stored or {}
        thinking, clear = stored.get("thinking"), stored.get("clear")
        return cls(
            context_window=stored.get("context_window"),
            reserve_tokens=stored.get("reserve_tokens"),
            trigger_tokens=stored.get("trigger_tokens"),
            keep_recent_tokens=stored.get("keep_recent_tokens"),
            thinking=ThinkingLevel(thinking) if thinking else None,
            strategy=stored.get("strategy"),
            clear=_clear_from_json(clear) if clear is not None else None,
            pinned=tuple(stored.get("pinned") or ()),
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON column: only the settings that were given."""
        stored: dict[str, Any] = {
            "context_window": self.context_window,
            "reserve_tokens": self.reserve_tokens,
            "trigger_tokens": self.trigger_tokens,
            "keep_recent_tokens": self.keep_recent_tokens,
            "thinking": self.thinking.value if self.thinking is not None else None,
            "strategy": self.strategy,
            "clear": _clear_to_json(self.clear) if self.clear is not None else None,
            "pinned": list(self.pinned) if self.pinned else None,
        }
        return {key: value for key, value in stored.items() if value is not None}


def _clear_from_json(stored: Mapping[str, Any]) -> ClearSettings:
    return ClearSettings(
        trigger=stored.get("trigger"),
        keep=int(stored.get("keep", DEFAULT_KEEP_TOOL_USES)),
        clear_at_least=int(stored.get("clear_at_least", 0)),
        exclude_tools=tuple(stored.get("exclude_tools") or ()),
        clear_tool_inputs=bool(stored.get("clear_tool_inputs", False)),
    )


def _clear_to_json(clear: ClearSettings) -> dict[str, Any]:
    return {
        "trigger": clear.trigger,
        "keep": clear.keep,
        "clear_at_least": clear.clear_at_least,
        "exclude_tools": list(clear.exclude_tools),
        "clear_tool_inputs": clear.clear_tool_inputs,
    }


@dataclass(frozen=True, slots=True)
class CompactionStall:
    """The numbers of an automatic compaction that left the context over the threshold."""

    entry_count: int
    tokens: int
    threshold: int
    kept_tokens: int
    keep_recent_tokens: int

    def to_json(self) -> dict[str, Any]:
        return {
            "entry_count": self.entry_count,
            "tokens": self.tokens,
            "threshold": self.threshold,
            "kept_tokens": self.kept_tokens,
            "keep_recent_tokens": self.keep_recent_tokens,
        }

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> CompactionStall:
        return cls(
            entry_count=int(stored.get("entry_count", -1)),
            tokens=int(stored.get("tokens", 0)),
            threshold=int(stored.get("threshold", 0)),
            kept_tokens=int(stored.get("kept_tokens", 0)),
            keep_recent_tokens=int(stored.get("keep_recent_tokens", 0)),
        )

    @property
    def warning(self) -> str:
        return (
            f"automatic compaction cannot bring the context under the threshold: it is "
            f"{self.tokens:,} tokens, over the threshold of {self.threshold:,}, and the "
            f"messages kept verbatim take {self.kept_tokens:,} of them "
            f"(keep_recent_tokens={self.keep_recent_tokens:,}). It is not tried again "
            f"until new messages arrive (after {self.entry_count} transcript entries); "
            "lower keep_recent_tokens, clear tool results, or compact manually"
        )


@dataclass(frozen=True, slots=True)
class SessionView:
    """One session: its model, format, prompt, tools, settings and counters."""

    id: str
    tenant: str
    model: str | None
    format: str | None
    system: Any
    tools: list[Any]
    settings: SessionSettings
    metadata: dict[str, Any]
    entry_count: int
    compaction_count: int
    # Leading OpenAI system/developer entries: always first in the context.
    system_prefix_count: int
    created_at: datetime
    compaction_stall: CompactionStall | None = None

    @classmethod
    def of(cls, row: SessionRow) -> SessionView:
        return cls(
            id=row.id,
            tenant=row.tenant,
            model=row.model,
            format=row.format,
            system=row.system,
            tools=list(row.tools or []),
            settings=SessionSettings.from_json(row.settings),
            metadata=dict(row.meta or {}),
            entry_count=int(row.entry_count or 0),
            compaction_count=int(row.compaction_count or 0),
            system_prefix_count=int(row.system_prefix_count or 0),
            created_at=aware(row.created_at),
            compaction_stall=(
                CompactionStall.from_json(row.compaction_stall) if row.compaction_stall else None
            ),
        )


@dataclass(frozen=True, slots=True)
class SummarizerRecord:
    """Who wrote a compaction's summary ("none" when only tool results were cleared)."""

    provider: str
    model: str
    thinking: ThinkingLevel
    attempts: int

    @classmethod
    def from_json(cls, stored: Mapping[str, Any] | None) -> SummarizerRecord:
        stored = stored or {}
        return cls(
            provider=str(stored.get("provider", "")),
            model=str(stored.get("model", "")),
            thinking=ThinkingLevel(stored.get("thinking") or "off"),
            attempts=int(stored.get("attempts", 1)),
        )


@dataclass(frozen=True, slots=True)
class RestoredFactRecord:
    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """One compaction: its summary, where the kept tail starts, and what it did."""

    id: str
    session_id: str
    ordinal: int
    created_at: datetime
    trigger: str
    summary: str
    first_kept_seq: int
    # The transcript length this compaction saw; usage on entries before it is stale.
    covered_seq: int
    tokens_before: int
    tokens_after: int
    summarizer: SummarizerRecord
    instructions: str | None
    previous_id: str | None
    strategy: str = DEFAULT_STRATEGY
    applied: tuple[str, ...] = ("summarize",)
    restored_facts: tuple[RestoredFactRecord, ...] = ()
    current_request: str | None = None
    cleared_tool_uses: tuple[ClearedToolUse, ...] = field(default=())

    @classmethod
    def of(cls, row: CompactionRow) -> CompactionRecord:
        return cls(
            id=row.id,
            session_id=row.session_id,
            ordinal=row.ordinal,
            created_at=aware(row.created_at),
            trigger=row.trigger,
            summary=row.summary,
            first_kept_seq=int(row.first_kept_seq),
            covered_seq=int(row.covered_seq),
            tokens_before=int(row.tokens_before),
            tokens_after=int(row.tokens_after),
            summarizer=SummarizerRecord.from_json(row.summarizer),
            instructions=row.instructions,
            previous_id=row.previous_id,
            strategy=row.strategy or DEFAULT_STRATEGY,
            applied=tuple(row.applied or ("summarize",)),
            restored_facts=tuple(
                RestoredFactRecord(str(f["kind"]), str(f["text"])) for f in row.restored_facts or ()
            ),
            current_request=row.current_request,
            cleared_tool_uses=cleared_from_json(row.cleared_tool_uses),
        )


@dataclass(frozen=True, slots=True)
class TranscriptEntry:
    """One original message, exactly as received, with its usage report if any."""

    seq: int
    message: Any
    usage: Mapping[str, int] | None = None

    @classmethod
    def of(cls, row: TranscriptEntryRow) -> TranscriptEntry:
        return cls(seq=int(row.seq), message=row.message, usage=row.usage or None)


def entries_of(rows: Sequence[TranscriptEntryRow]) -> list[TranscriptEntry]:
    return [TranscriptEntry.of(row) for row in rows]
