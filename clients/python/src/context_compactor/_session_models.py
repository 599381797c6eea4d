"""Typed answers of the session calls (sessions, transcript, context, compaction records)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from context_compactor import _fields as f
from context_compactor._models import (
    ClearedToolUse,
    Estimate,
    Message,
    RestoredFact,
    SummarizerInfo,
    SystemPromptText,
    cleared_tool_uses,
    restored_facts,
)
from context_compactor._types import (
    APPLIED_STEPS,
    CHANGED_VIA,
    FORMATS,
    SEARCH_MATCHES,
    STRATEGIES,
    THINKING_LEVELS,
    TRIGGERS,
    AppliedStep,
    ChangedVia,
    Format,
    SearchMatch,
    Strategy,
    ThinkingLevel,
    Trigger,
)


@dataclass(frozen=True)
class ClearSettings:
    """A session's tool-result clearing settings."""

    keep: int
    clear_at_least: int
    trigger: int | None
    exclude_tools: list[str]
    clear_tool_inputs: bool

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> ClearSettings:
        return cls(
            keep=f.integer_or(raw, "keep", 3),
            clear_at_least=f.integer_or(raw, "clear_at_least", 0),
            trigger=f.opt_integer(raw, "trigger"),
            exclude_tools=f.texts(raw, "exclude_tools"),
            clear_tool_inputs=f.flag_or(raw, "clear_tool_inputs", False),
        )


@dataclass(frozen=True)
class Session:
    """A stored session: its settings and how much it holds."""

    id: str
    model: str | None
    format: Format | None
    system: SystemPromptText
    tools: list[dict[str, Any]]
    context_window: int | None
    reserve_tokens: int | None
    trigger_tokens: int | None
    keep_recent_tokens: int | None
    thinking: ThinkingLevel | None
    strategy: Strategy
    clear: ClearSettings | None
    pinned: list[str]
    metadata: dict[str, Any]
    message_count: int
    compaction_count: int
    created_at: datetime
    # Past this ratio of the threshold the next compaction is prepared in the background;
    # "off": never for this session; None: the model's or the service's.
    prepare_ahead_ratio: float | Literal["off"] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Session:
        clear = f.opt_obj(raw, "clear")
        return cls(
            id=f.text(raw, "id"),
            model=f.opt_text(raw, "model"),
            format=f.opt_one_of(raw, "format", FORMATS),
            system=f.system(raw),
            tools=f.objects(raw, "tools"),
            context_window=f.opt_integer(raw, "context_window"),
            reserve_tokens=f.opt_integer(raw, "reserve_tokens"),
            trigger_tokens=f.opt_integer(raw, "trigger_tokens"),
            keep_recent_tokens=f.opt_integer(raw, "keep_recent_tokens"),
            thinking=f.opt_one_of(raw, "thinking", THINKING_LEVELS),
            strategy=f.one_of_or(raw, "strategy", STRATEGIES, "summarize"),
            clear=None if clear is None else ClearSettings.parse(clear),
            pinned=f.texts(raw, "pinned"),
            metadata=f.obj(raw, "metadata"),
            message_count=f.integer(raw, "message_count"),
            compaction_count=f.integer(raw, "compaction_count"),
            created_at=f.timestamp(raw, "created_at"),
            prepare_ahead_ratio=f.opt_ratio(raw, "prepare_ahead_ratio"),
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
    system: SystemPromptText
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
    trigger: Trigger
    summary: str
    first_kept_seq: int
    tokens_before: int
    tokens_after: int
    summarizer: SummarizerInfo
    instructions: str | None
    previous_id: str | None
    strategy: Strategy
    applied: list[AppliedStep]
    cleared_tool_uses: list[ClearedToolUse]
    restored_facts: list[RestoredFact]
    current_request: str | None
    reverted_id: str | None
    """For a `revert` record: the compaction it undid."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> CompactionRecord:
        return cls(
            id=f.text(raw, "id"),
            created_at=f.timestamp(raw, "created_at"),
            trigger=f.one_of(raw, "trigger", TRIGGERS),
            summary=f.text(raw, "summary"),
            first_kept_seq=f.integer(raw, "first_kept_seq"),
            tokens_before=f.integer(raw, "tokens_before"),
            tokens_after=f.integer(raw, "tokens_after"),
            summarizer=SummarizerInfo.parse(f.obj(raw, "summarizer")),
            instructions=f.opt_text(raw, "instructions"),
            previous_id=f.opt_text(raw, "previous_id"),
            strategy=f.one_of_or(raw, "strategy", STRATEGIES, "summarize"),
            applied=f.all_of(raw, "applied", APPLIED_STEPS),
            cleared_tool_uses=cleared_tool_uses(raw),
            restored_facts=restored_facts(raw),
            current_request=f.opt_text(raw, "current_request"),
            reverted_id=f.opt_text(raw, "reverted_id"),
            raw=raw,
        )


@dataclass(frozen=True)
class Folded:
    """The transcript entries a compaction folds into its summary."""

    from_seq: int
    to_seq: int
    count: int

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Folded:
        return cls(
            from_seq=f.integer(raw, "from_seq"),
            to_seq=f.integer(raw, "to_seq"),
            count=f.integer(raw, "count"),
        )


@dataclass(frozen=True)
class PrepareResult:
    """POST /sessions/{id}/prepare and /compact: whether it compacted, and the context."""

    compacted: bool
    reason: str | None
    compaction: CompactionRecord | None
    context: Context
    compaction_ineffective: bool
    """The kept tail alone is over the threshold: compacting again would not help."""
    warning: str | None
    dry_run: bool
    """A preview: `compaction` (id `dry-run`) and `context` were not written."""
    folded: Folded | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> PrepareResult:
        compaction = f.opt_obj(raw, "compaction")
        folded = f.opt_obj(raw, "folded")
        return cls(
            compacted=f.flag(raw, "compacted"),
            reason=f.opt_text(raw, "reason"),
            compaction=None if compaction is None else CompactionRecord.parse(compaction),
            context=Context.parse(f.obj(raw, "context")),
            compaction_ineffective=f.flag_or(raw, "compaction_ineffective", False),
            warning=f.opt_text(raw, "warning"),
            dry_run=f.flag_or(raw, "dry_run", False),
            folded=None if folded is None else Folded.parse(folded),
            raw=raw,
        )


def parse_compactions(raw: dict[str, Any]) -> list[CompactionRecord]:
    """GET /sessions/{id}/compactions, oldest first."""
    return [CompactionRecord.parse(c) for c in f.objects(raw, "compactions")]


@dataclass(frozen=True)
class SearchHit:
    """One transcript entry that matched, with a snippet (matches between ** and **)."""

    seq: int
    role: str
    snippet: str
    folded: bool
    """Compaction folded the entry away: the context holds it only in the summary."""
    rank: int
    score: float

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SearchHit:
        score = raw.get("score")
        if not isinstance(score, (int, float)) or isinstance(score, bool):
            raise f.MalformedAnswerError("'score' is not a number")
        return cls(
            seq=f.integer(raw, "seq"),
            role=f.text(raw, "role"),
            snippet=f.text(raw, "snippet"),
            folded=f.flag(raw, "folded"),
            rank=f.integer(raw, "rank"),
            score=float(score),
        )


@dataclass(frozen=True)
class SearchResult:
    """GET /sessions/{id}/search: the matching entries, best first."""

    query: str
    match: SearchMatch
    hits: list[SearchHit]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SearchResult:
        return cls(
            query=f.text(raw, "query"),
            match=f.one_of(raw, "match", SEARCH_MATCHES),
            hits=[SearchHit.parse(h) for h in f.objects(raw, "hits")],
            raw=raw,
        )


@dataclass(frozen=True)
class RevertResult:
    """POST /sessions/{id}/compactions/{cid}/revert: the new `revert` record and context."""

    compaction: CompactionRecord
    context: Context
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> RevertResult:
        return cls(
            compaction=CompactionRecord.parse(f.obj(raw, "compaction")),
            context=Context.parse(f.obj(raw, "context")),
            raw=raw,
        )


@dataclass(frozen=True)
class SettingsChange:
    """One recorded settings change: who, how, when, and each field's before and after."""

    changed_by: str
    via: ChangedVia
    changes: dict[str, dict[str, Any]]
    created_at: datetime

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SettingsChange:
        return cls(
            changed_by=f.text(raw, "changed_by"),
            via=f.one_of(raw, "via", CHANGED_VIA),
            changes=f.obj(raw, "changes"),
            created_at=f.timestamp(raw, "created_at"),
        )


def parse_changes(raw: dict[str, Any]) -> list[SettingsChange]:
    """GET /sessions/{id}/changes, oldest first."""
    return [SettingsChange.parse(c) for c in f.objects(raw, "changes")]


@dataclass(frozen=True)
class TokensByKind:
    """Tokens as the upstream's usage reported them."""

    input_tokens: int
    """Uncached input tokens."""
    cache_write_tokens: int
    cache_read_tokens: int
    output_tokens: int

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> TokensByKind:
        return cls(
            input_tokens=f.integer(raw, "input_tokens"),
            cache_write_tokens=f.integer(raw, "cache_write_tokens"),
            cache_read_tokens=f.integer(raw, "cache_read_tokens"),
            output_tokens=f.integer(raw, "output_tokens"),
        )


@dataclass(frozen=True)
class DollarsByKind:
    """US dollars per kind of token at the service's registry prices."""

    input: float
    cache_write: float
    cache_read: float
    output: float
    total: float

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> DollarsByKind:
        return cls(
            input=f.number(raw, "input"),
            cache_write=f.number(raw, "cache_write"),
            cache_read=f.number(raw, "cache_read"),
            output=f.number(raw, "output"),
            total=f.number(raw, "total"),
        )


@dataclass(frozen=True)
class CostPart:
    """Tokens and dollars of the upstream's or the summarizer's calls."""

    calls: int
    tokens: TokensByKind
    cost_usd: DollarsByKind | None
    """None when a call's model has no price for a kind it used."""

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> CostPart:
        dollars = f.opt_obj(raw, "cost_usd")
        return cls(
            calls=f.integer(raw, "calls"),
            tokens=TokensByKind.parse(f.obj(raw, "tokens")),
            cost_usd=None if dollars is None else DollarsByKind.parse(dollars),
        )


@dataclass(frozen=True)
class Uncompacted:
    """What the same upstream calls would have cost without the session's compactions."""

    folded_tokens: int
    cost_usd: float | None

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Uncompacted:
        return cls(
            folded_tokens=f.integer(raw, "folded_tokens"),
            cost_usd=f.opt_number(raw, "cost_usd"),
        )


@dataclass(frozen=True)
class SessionCost:
    """GET /sessions/{id}/cost: what the session cost, by kind, and what it saved."""

    session_id: str
    upstream: CostPart
    summarizer: CostPart
    total_cost_usd: float | None
    uncompacted: Uncompacted
    saved_usd: float | None
    """Negative when compacting cost more than it saved."""
    unpriced_models: list[str]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SessionCost:
        return cls(
            session_id=f.text(raw, "session_id"),
            upstream=CostPart.parse(f.obj(raw, "upstream")),
            summarizer=CostPart.parse(f.obj(raw, "summarizer")),
            total_cost_usd=f.opt_number(raw, "total_cost_usd"),
            uncompacted=Uncompacted.parse(f.obj(raw, "uncompacted")),
            saved_usd=f.opt_number(raw, "saved_usd"),
            unpriced_models=f.texts(raw, "unpriced_models"),
            raw=raw,
        )


@dataclass(frozen=True)
class CostLine:
    """The tenant's calls of one source, API (or provider) and model."""

    source: str
    """`upstream` (proxied requests) or `summarizer`."""
    api: str
    model: str
    calls: int
    tokens: TokensByKind
    cost_usd: DollarsByKind | None

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> CostLine:
        part = CostPart.parse(raw)
        return cls(
            source=f.text(raw, "source"),
            api=f.text(raw, "api"),
            model=f.text(raw, "model"),
            calls=part.calls,
            tokens=part.tokens,
            cost_usd=part.cost_usd,
        )


@dataclass(frozen=True)
class TenantCost:
    """GET /cost: what the caller's tenant was billed, by source, API and model."""

    lines: list[CostLine]
    total_cost_usd: float | None
    unpriced_models: list[str]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> TenantCost:
        return cls(
            lines=[CostLine.parse(item) for item in f.objects(raw, "lines")],
            total_cost_usd=f.opt_number(raw, "total_cost_usd"),
            unpriced_models=f.texts(raw, "unpriced_models"),
            raw=raw,
        )
