"""Frozen, typed views of what the store holds: what its repositories take and hand out
instead of ORM rows and JSON columns (those are mapped in `app.store.mapping`, once).

Plain values only (no database library): the services hand them on, and the API maps
them to its bodies through `app.services.sessions.views`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from app.engine.clearing import ClearedToolUse, ClearSettings
from app.engine.compaction.strategy import DEFAULT_STRATEGY, CompactionStep, StrategyName
from app.engine.thinking import ThinkingLevel


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """A session's compaction settings; None means the service default."""

    context_window: int | None = None
    reserve_tokens: int | None = None
    trigger_tokens: int | None = None
    keep_recent_tokens: int | None = None
    thinking: ThinkingLevel | None = None
    strategy: StrategyName | None = None
    clear: ClearSettings | None = None
    pinned: tuple[str, ...] = ()
    # Of the threshold, past which the next compaction is prepared in the background
    # (SPEC §16); "off": never for this session; None: the model's policy or the service's.
    prepare_ahead_ratio: float | Literal["off"] | None = None

    @property
    def effective_strategy(self) -> StrategyName:
        return self.strategy or DEFAULT_STRATEGY

    @property
    def effective_clear(self) -> ClearSettings:
        return self.clear or ClearSettings()


@dataclass(frozen=True, slots=True)
class CompactionStall:
    """The numbers of an automatic compaction that left the context over the threshold."""

    entry_count: int
    tokens: int
    threshold: int
    kept_tokens: int
    keep_recent_tokens: int
    # The last cut summarized for it (`latest record id:first kept seq`): a later attempt
    # on the same base would make the same ineffective summarizer call, and is skipped.
    base: str | None = None

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
class NewSession:
    """What a caller may set on a new session; everything is optional."""

    model: str | None = None
    format: str | None = None
    system: Any = None
    tools: list[Any] = field(default_factory=list)
    settings: SessionSettings = field(default_factory=SessionSettings)
    metadata: dict[str, Any] = field(default_factory=dict)


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


@dataclass(frozen=True, slots=True)
class SummarizerRecord:
    """Who wrote a compaction's summary ("none" when only tool results were cleared)."""

    provider: str
    model: str
    thinking: ThinkingLevel
    attempts: int


NO_SUMMARIZER = SummarizerRecord(
    provider="none", model="none", thinking=ThinkingLevel.OFF, attempts=0
)


@dataclass(frozen=True, slots=True)
class RestoredFactRecord:
    kind: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NewCompaction:
    """A compaction to record: its summary, where the kept tail starts, and what it did."""

    session_id: str
    # One more than the latest record's: two compactions built on one base collide here.
    ordinal: int
    previous_id: str | None
    trigger: str
    summary: str
    first_kept_seq: int
    # The transcript length this compaction saw; usage on entries before it is stale.
    covered_seq: int
    tokens_before: int
    tokens_after: int
    summarizer: SummarizerRecord
    instructions: str | None
    strategy: StrategyName = DEFAULT_STRATEGY
    applied: tuple[CompactionStep, ...] = (CompactionStep.SUMMARIZE,)
    restored_facts: tuple[RestoredFactRecord, ...] = ()
    current_request: str | None = None
    cleared_tool_uses: tuple[ClearedToolUse, ...] = ()
    # A `revert` record: the compaction whose context it undid.
    reverted_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionRecord(NewCompaction):
    """A recorded compaction: what was recorded, with its id and when."""

    id: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TranscriptEntry:
    """One original message, exactly as received, with its usage report if any."""

    seq: int
    message: Any
    usage: Mapping[str, int] | None = None


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One entry as exported: the message as received, its usage, search text and time."""

    seq: int
    message: Any
    usage: Mapping[str, int] | None
    search_text: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class SettingsChange:
    """One recorded change of a session's settings: who, through what, when, and each
    field's value before and after."""

    changed_by: str
    via: str
    changes: Mapping[str, Mapping[str, Any]]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What an append answered: replayed for a repeat with the same Idempotency-Key."""

    appended: int
    first_seq: int | None
    last_seq: int | None


@dataclass(frozen=True, slots=True)
class IdempotentAppend:
    """A kept Idempotency-Key: the hash of the batch it came with, and the answer."""

    request_hash: str
    answer: AppendResult


@dataclass(frozen=True, slots=True)
class BoundTurn:
    """A proxied request's turn in its session (SPEC §10): where its messages end in the
    transcript, and where its reply ends once one was recorded."""

    key: str
    request_hash: str
    end_seq: int
    reply_end_seq: int | None


# --- The proxy's summary cache (SPEC §10) ---------------------------------------------


@dataclass(frozen=True, slots=True)
class CachedSummary:
    """A stored summary of the first `prefix_len` messages (after the inline system)."""

    prefix_len: int
    prefix_tokens: int
    summary_message: Any


@dataclass(frozen=True, slots=True)
class StoredPrefix:
    """One cache entry without its summary: which prefix it covers, by length and hash.
    `entry` is the adapter's handle for reading the summary (opaque to callers)."""

    entry: str
    prefix_len: int
    prefix_hash: str


@dataclass(frozen=True, slots=True)
class CompactedResend:
    """What the proxy forwarded for a compacted body, as a recipe over the received
    history: its first `lead` messages unchanged, then `middle` (a JSON array: the
    summary and whatever else changed), then the received messages from `keep_from` on.
    Rebuilt only against a history of `history_len` messages (the same bytes give the
    same history), so an entry holds a summary's bytes, not a whole history's."""

    history_len: int
    lead: int
    keep_from: int
    middle: bytes
    tokens_before: int
    tokens_after: int

    @property
    def size(self) -> int:
        """The bytes it holds (what memo bounds count)."""
        return len(self.middle)


@dataclass(frozen=True, slots=True)
class UiLogin:
    """One inspector login: the SHA-256 of its cookie's token, whose key made it (an HMAC
    of the key), and until when it opens the inspector."""

    token_hash: str
    tenant: str
    key_id: str
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class BilledTokens:
    """One call's tokens as its upstream's usage reported them: uncached input, cache
    write, cache read, output."""

    input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    # Of `cache_write_tokens`, those written with Anthropic's 1-hour TTL.
    cache_write_1h_tokens: int = 0

    def plus(self, other: BilledTokens) -> BilledTokens:
        """Both together."""
        return BilledTokens(
            self.input_tokens + other.input_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One billed call to record: whose (tenant, session or None), what (`upstream` or
    `summarizer`), through which API or provider, for which model."""

    tenant: str
    session_id: str | None
    source: str
    api: str
    model: str
    tokens: BilledTokens


@dataclass(frozen=True, slots=True)
class LedgerLine:
    """A recorded call, or the sum of several (`calls`); `created_at` the latest of them."""

    source: str
    api: str
    model: str
    tokens: BilledTokens
    calls: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class JobRequest:
    """What an asynchronous compaction was asked to do."""

    reason: str
    instructions: str | None = None
    thinking: ThinkingLevel | None = None
    strategy: StrategyName | None = None


@dataclass(frozen=True, slots=True)
class JobFailure:
    """Why a job failed: the domain error's class name (the API maps it to its problem
    type) and its message."""

    kind: str
    detail: str


@dataclass(frozen=True, slots=True)
class CompactionJobView:
    """An asynchronous compaction (SPEC §16) as the store holds it."""

    id: str
    tenant: str
    session_id: str
    state: str
    request: JobRequest
    chunks_done: int
    chunks_total: int | None
    compaction_id: str | None
    failure: JobFailure | None
    created_at: datetime
    heartbeat_at: datetime
    finished_at: datetime | None
