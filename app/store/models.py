"""Tables of the session store. Entries and compactions are append-only."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class SessionRow(Base):
    """One agent session: its settings and counters."""

    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(100), index=True)
    model: Mapped[str | None] = mapped_column(String(200))
    format: Mapped[str | None] = mapped_column(String(20))
    system: Mapped[Any] = mapped_column(JSON, nullable=True)
    tools: Mapped[list[Any]] = mapped_column(JSON, default=list)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    # Number of transcript entries; the next entry gets seq = entry_count. Incremented in
    # one UPDATE so concurrent appends never share a sequence number.
    entry_count: Mapped[int] = mapped_column(BigInteger, default=0)
    compaction_count: Mapped[int] = mapped_column(Integer, default=0)
    # Leading OpenAI system/developer entries: always first in the context, never summarized.
    system_prefix_count: Mapped[int] = mapped_column(Integer, default=0)
    # Set when automatic compaction could not bring the context under the threshold: the
    # entry count then, and the numbers. `prepare` does not try again before new entries.
    compaction_stall: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # A lease on the session's automatic compaction (SPEC §10): who is summarizing it and
    # until when. Other replicas wait for it instead of summarizing the same history; a
    # crashed holder's lease simply runs out.
    compaction_lease_owner: Mapped[str | None] = mapped_column(String(36), nullable=True)
    compaction_lease_until: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class TranscriptEntryRow(Base):
    """One original message, exactly as received, with its optional usage report."""

    __tablename__ = "transcript_entries"
    __table_args__ = (UniqueConstraint("session_id", "seq"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), index=True
    )
    seq: Mapped[int] = mapped_column(BigInteger)
    message: Mapped[Any] = mapped_column(JSON)
    usage: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The words the entry is found by (text, tool names, arguments, results), written at
    # append; indexed by SQLite FTS5 or a PostgreSQL GIN index (`app.store.search`), which
    # the migrations own.
    search_text: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class CompactionRow(Base):
    """One compaction: the summary and where the kept tail starts."""

    __tablename__ = "compactions"
    # One record per (session, ordinal): two compactions built on the same base collide
    # here, and the second one to commit loses.
    __table_args__ = (UniqueConstraint("session_id", "ordinal"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), index=True
    )
    ordinal: Mapped[int] = mapped_column(Integer)
    summary: Mapped[str] = mapped_column(Text)
    first_kept_seq: Mapped[int] = mapped_column(BigInteger)
    # The transcript length this compaction saw; usage on entries before it is stale.
    covered_seq: Mapped[int] = mapped_column(BigInteger)
    tokens_before: Mapped[int] = mapped_column(BigInteger)
    tokens_after: Mapped[int] = mapped_column(BigInteger)
    trigger: Mapped[str] = mapped_column(String(20))
    summarizer: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    instructions: Mapped[str | None] = mapped_column(Text, nullable=True)
    previous_id: Mapped[str | None] = mapped_column(
        ForeignKey("compactions.id", ondelete="SET NULL"), nullable=True
    )
    # The strategy asked for and the steps applied (clear_tool_results, summarize).
    strategy: Mapped[str] = mapped_column(
        String(30), default="summarize", server_default="summarize"
    )
    applied: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    # Pinned facts the summarizer left out and the service added back.
    restored_facts: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    # The request of the turn the cut fell inside, quoted by the summary.
    current_request: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Every tool use cleared in the context this record describes (placeholders included),
    # so the context is rebuilt from the untouched transcript.
    cleared_tool_uses: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    # A `revert` record: the compaction whose context it undid (SPEC §17).
    reverted_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class IdempotencyKeyRow(Base):
    """The answer given to an append with an `Idempotency-Key`, replayed on repeats until
    the key expires (COMPACTOR_IDEMPOTENCY_RETENTION_HOURS after `created_at`)."""

    __tablename__ = "idempotency_keys"

    session_id: Mapped[str] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    request_hash: Mapped[str] = mapped_column(String(64))
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class BoundTurnRow(Base):
    """One turn of a proxied request bound to the session (SPEC §10): the key of the
    request (its Idempotency-Key or its body, hashed), where its messages end in the
    transcript and where its reply ends once recorded. A retry of the same request finds
    it and records nothing; the first reply to finish is the one recorded."""

    __tablename__ = "bound_turns"

    session_id: Mapped[str] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    # Hash of the history the turn came with: an Idempotency-Key reused for other
    # messages is refused.
    request_hash: Mapped[str] = mapped_column(String(64))
    # Transcript length once the turn's messages were recorded (exclusive end).
    end_seq: Mapped[int] = mapped_column(BigInteger)
    reply_end_seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SummaryCacheRow(Base):
    """A summary the proxy wrote for an exact history prefix, reused when a stateless
    caller resends that prefix (SPEC §10). Bounded per tenant; oldest rows go first."""

    __tablename__ = "summary_cache"
    __table_args__ = (UniqueConstraint("tenant", "scope_key", "prefix_hash"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(100))
    # Hash of what else shapes the summary: format, system prompt, tools, summarizer.
    scope_key: Mapped[str] = mapped_column(String(64))
    # Messages summarized (after the inline system prompt) and the chained hash of them.
    prefix_len: Mapped[int] = mapped_column(BigInteger)
    prefix_hash: Mapped[str] = mapped_column(String(64))
    prefix_tokens: Mapped[int] = mapped_column(BigInteger)
    # The summary message in the request's wire format, ready to put in place of the prefix.
    summary_message: Mapped[Any] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


Index("ix_summary_cache_tenant_scope", SummaryCacheRow.tenant, SummaryCacheRow.scope_key)
Index("ix_sessions_tenant_created", SessionRow.tenant, SessionRow.created_at)


class UiLoginRow(Base):
    """One inspector login (SPEC §9): what its cookie opens and until when. The cookie is
    a random token stored only as its SHA-256; the key is stored only as an HMAC with the
    service's secret, so neither a leaked cookie nor a leaked row tells anything about it.
    Logout deletes the row, on every replica at once."""

    __tablename__ = "ui_logins"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(100))
    # HMAC-SHA256 of the API key that logged in: the login ends when that key is removed.
    key_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


Index("ix_ui_logins_tenant_created", UiLoginRow.tenant, UiLoginRow.created_at)
# Expired Idempotency-Keys are found (and deleted a batch at a time) by age.
Index("ix_idempotency_keys_created_at", IdempotencyKeyRow.created_at)
# Expired bound turns go the same way.
Index("ix_bound_turns_created_at", BoundTurnRow.created_at)


class LeaseRow(Base):
    """A named lease with a time to live (SPEC §16, §18): one replica at a time does a
    piece of background work; a holder that dies loses it when `expires_at` passes."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    # Opaque: one per replica (a random id made at start).
    holder: Mapped[str] = mapped_column(String(64))
    # Seconds since the epoch by the holder's clock (replicas' clocks are assumed in
    # sync to well under a lease's time to live).
    expires_at: Mapped[float] = mapped_column(Float)


class SessionChangeRow(Base):
    """One change of a session's settings (PATCH /sessions/{id}): who, when, and each
    field's value before and after. Append-only, like the transcript."""

    __tablename__ = "session_changes"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), index=True
    )
    # The tenant whose key made the change, and through what (api, inspector).
    changed_by: Mapped[str] = mapped_column(String(100))
    via: Mapped[str] = mapped_column(String(20))
    # {field: {"before": value, "after": value}}
    changes: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class CostLedgerRow(Base):
    """One billed call as its upstream's usage reported it (SPEC §15): a proxied request
    (source `upstream`) or a summary call (source `summarizer`). Append-only: totals are
    sums, so concurrent writers never contend on a counter row. `session_id` is null for
    a stateless request (the tenant's ledger only); no foreign key, so the tenant's
    totals outlive a deleted session."""

    __tablename__ = "cost_ledger"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(100))
    session_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    source: Mapped[str] = mapped_column(String(20))
    # The API (`messages`, `chat_completions`, …) or the summarizer's provider.
    api: Mapped[str] = mapped_column(String(40))
    model: Mapped[str] = mapped_column(String(200))
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cache_write_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cache_read_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    # Of the cache writes, those with Anthropic's 1-hour TTL (priced apart).
    cache_write_1h_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


Index("ix_cost_ledger_session", CostLedgerRow.session_id)
Index("ix_cost_ledger_tenant_created", CostLedgerRow.tenant, CostLedgerRow.created_at)


class CompactionJobRow(Base):
    """One compaction asked for asynchronously (`Prefer: respond-async`, SPEC §16): its
    state, progress and outcome, kept for COMPACTOR_COMPACTION_JOB_RETENTION_HOURS. The
    outcome is written in the transaction of the compaction record it names, so a job is
    never `done` without its record, nor a record left behind by a job still `running`."""

    __tablename__ = "compaction_jobs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(100))
    session_id: Mapped[str] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), index=True
    )
    # queued, running, done, failed, abandoned (the process running it stopped).
    state: Mapped[str] = mapped_column(String(20))
    # {reason, instructions, thinking, strategy}: what was asked for.
    request: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    chunks_done: Mapped[int] = mapped_column(Integer, default=0)
    chunks_total: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # No foreign key: a revert or delete of records never touches the job's history.
    compaction_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    # {kind, detail} of the failure: the API maps `kind` to its problem type.
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # Renewed while the job runs: a job whose process died stops being renewed, and is
    # reported abandoned once this is older than the heartbeat's lease.
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


# Expired jobs are found (and deleted a batch at a time) by age.
Index("ix_compaction_jobs_created_at", CompactionJobRow.created_at)
