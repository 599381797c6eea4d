"""Undoing a compaction and forking a session (SPEC §17), both append-only.

A revert writes a new record (`trigger: revert`) that describes the context as it was
before the reverted compaction: that compaction's base summary, kept entries and cleared
tool uses, with every entry appended since. Later compactions build on it like on any
record. A fork copies a prefix of the transcript, and the records built only from that
prefix, into a new session; nothing mutable is shared (new ids, its own counters).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.strategy import DEFAULT_STRATEGY
from app.engine.errors import CompactorError
from app.services.estimation import EstimationService
from app.services.sessions.compactions import ContextView
from app.services.sessions.context import build_context
from app.services.sessions.errors import CompactionConflictError
from app.services.sessions.records import preview_record
from app.services.sessions.transactions import SessionStore
from app.store.errors import DuplicateKeyError
from app.store.transactions import StoreTransaction
from app.store.views import (
    NO_SUMMARIZER,
    CompactionRecord,
    NewCompaction,
    NewSession,
    SessionView,
)

REVERT_TRIGGER = "revert"
# Entries copied per statement when forking.
_COPY_PAGE = 1_000


class CompactionNotFoundError(CompactorError):
    """No such compaction record in this session."""


class InvalidForkPointError(CompactorError):
    """`at_seq` is not an entry of the session."""


@dataclass(frozen=True, slots=True)
class RevertResult:
    record: CompactionRecord
    view: ContextView


class SessionRevisions:
    def __init__(
        self, store: SessionStore, estimation: EstimationService, marker: SummaryMarker
    ) -> None:
        self._store = store
        self.estimation = estimation
        self.marker = marker

    def revert(self, tenant: str, session_id: str, compaction_id: str) -> RevertResult:
        """Makes the context the one before `compaction_id` again, as a new record."""
        with self._store.transaction() as tx:
            session = self._store.require(tx, tenant, session_id)
            target = tx.compactions.get(session_id, compaction_id)
            if target is None:
                raise CompactionNotFoundError(
                    f"compaction {compaction_id} not found in session {session_id}"
                )
            latest = tx.compactions.latest(session_id)
            assert latest is not None  # the target is one
            base = (
                tx.compactions.get(session_id, target.previous_id) if target.previous_id else None
            )
            prefix = tx.transcript.page(session_id, 0, session.system_prefix_count)
            kept_now = tx.transcript.from_seq(session_id, latest.first_kept_seq)
            first_kept = base.first_kept_seq if base is not None else 0
            kept_then = tx.transcript.from_seq(session_id, first_kept)
        before = self.estimation.count(
            build_context(session, latest, prefix, kept_now, self.marker).history()
        )
        new = NewCompaction(
            session_id=session_id,
            ordinal=latest.ordinal + 1,
            previous_id=latest.id,
            trigger=REVERT_TRIGGER,
            summary=base.summary if base is not None else "",
            first_kept_seq=first_kept,
            # Every usage report so far described another context: none is trusted.
            covered_seq=session.entry_count,
            tokens_before=before.estimate.tokens,
            tokens_after=0,
            summarizer=NO_SUMMARIZER,
            instructions=None,
            strategy=base.strategy if base is not None else DEFAULT_STRATEGY,
            applied=(),
            restored_facts=base.restored_facts if base is not None else (),
            current_request=base.current_request if base is not None else None,
            cleared_tool_uses=base.cleared_tool_uses if base is not None else (),
            reverted_id=target.id,
        )
        context = build_context(session, preview_record(new), prefix, kept_then, self.marker)
        after = self.estimation.count(context.history())
        new = replace(new, tokens_after=after.estimate.tokens)
        try:
            with self._store.transaction() as tx:
                self._store.require(tx, tenant, session_id)
                record = tx.compactions.add(new)
        except DuplicateKeyError as exc:
            raise CompactionConflictError(
                "another compaction of this session was recorded meanwhile; "
                "list the compactions again and revert the one you mean"
            ) from exc
        session = replace(session, compaction_count=record.ordinal)
        context = replace(context, session=session, latest=record)
        return RevertResult(record, ContextView(context, after))

    def fork(self, tenant: str, session_id: str, at_seq: int) -> SessionView:
        """A new session holding entries 0..`at_seq` of this one (inclusive), its
        settings, and the compaction records built from those entries only."""
        with self._store.transaction() as tx:
            source = self._store.require(tx, tenant, session_id)
            if not 0 <= at_seq < source.entry_count:
                raise InvalidForkPointError(
                    f"at_seq {at_seq} is not an entry of session {session_id}: it has "
                    f"{source.entry_count} entries (seq 0 to {source.entry_count - 1})"
                )
            metadata: dict[str, Any] = {
                **source.metadata,
                "forked_from": {"session_id": source.id, "at_seq": at_seq},
            }
            fork = tx.sessions.add(
                tenant,
                NewSession(
                    model=source.model,
                    format=source.format,
                    system=source.system,
                    tools=list(source.tools),
                    settings=source.settings,
                    metadata=metadata,
                ),
            )
            count = at_seq + 1
            _copy_entries(tx, source.id, fork.id, count)
            records = [r for r in tx.compactions.all(source.id) if r.covered_seq <= count]
            copy_records(tx, fork.id, records)
            tx.sessions.set_counters(
                fork.id,
                entry_count=count,
                system_prefix_count=min(source.system_prefix_count, count),
                compaction_count=len(records),
            )
            forked = tx.sessions.get(fork.id, tenant)
            assert forked is not None
            return forked


def _copy_entries(tx: StoreTransaction, source: str, target: str, count: int) -> None:
    after = -1
    while True:
        page = tx.transcript.stored(source, after, count, _COPY_PAGE)
        if not page:
            return
        tx.transcript.restore(target, page)
        after = page[-1].seq


def copy_records(
    tx: StoreTransaction, session_id: str, records: list[CompactionRecord]
) -> dict[str, str]:
    """Writes `records` (oldest first) into `session_id` under new ids, links remapped;
    the old id → new id of each."""
    ids: dict[str, str] = {}
    for record in records:
        fields = {name: getattr(record, name) for name in NewCompaction.__dataclass_fields__}
        fields.update(
            session_id=session_id,
            previous_id=ids.get(record.previous_id) if record.previous_id else None,
            reverted_id=ids.get(record.reverted_id) if record.reverted_id else None,
        )
        written = tx.compactions.add(NewCompaction(**fields), created_at=record.created_at)
        ids[record.id] = written.id
    return ids
