"""The inspector's one reader of the session store: everything through SessionService.

Sessions, compactions and the transcript are read only through SessionService's public
methods (get, list_for_tenant, transcript, compactions, context), and only here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.formats.protocol import WireFormat
from app.formats.registry import FORMATS
from app.services.estimation import CountedHistory
from app.services.history import HistoryInput
from app.services.inspector.curve import CompactionCost, token_curve
from app.services.inspector.summary_diff import diff_summaries
from app.services.inspector.transcript_view import EntryState, EntryView, entry_parts
from app.services.inspector.views import (
    CompactionView,
    Page,
    SessionInspection,
    SessionItem,
    SessionList,
)
from app.services.sessions.context import session_history
from app.services.sessions.service import SessionService
from app.services.sessions.views import CompactionRecord, SessionView

# The session store hands out at most this many transcript entries per read.
_TRANSCRIPT_CHUNK = 5_000


class InspectorService:
    """Reads a tenant's sessions for the inspector page."""

    def __init__(self, sessions: SessionService) -> None:
        self._sessions = sessions

    def list_sessions(self, tenant: str, page: int, size: int) -> SessionList:
        """One page of the tenant's sessions, newest first."""
        number = max(1, page)
        rows, total = self._sessions.list_for_tenant(tenant, (number - 1) * size, size)
        return SessionList(tuple(_item(r) for r in rows), Page(number, size, total))

    def inspect(self, tenant: str, session_id: str, page: int, size: int) -> SessionInspection:
        """One session: its curve, compactions and one page of its transcript."""
        session = self._sessions.get(tenant, session_id)
        records = sorted(self._sessions.compactions(tenant, session_id), key=lambda r: r.ordinal)
        messages = self._all_messages(tenant, session_id)
        wire = FORMATS.get(session.format) if session.format else FORMATS.default
        counted = self._count(session, wire, messages)
        per_entry = counted.per_message
        costs = [self._cost(wire, session, r, messages) for r in records]
        curve = token_curve(
            per_entry,
            fixed_tokens=counted.system_tokens + counted.tools_tokens,
            reply_priming=counted.reply_priming,
            system_prefix_count=session.system_prefix_count,
            compactions=costs,
            threshold=counted.threshold,
            context_window=counted.settings.effective_window,
        )
        views = _compaction_views(records, session.system_prefix_count)
        last_page = Page(1, size, len(messages)).count
        transcript_page = Page(min(max(1, page), last_page), size, len(messages))
        start = transcript_page.offset
        entries = tuple(
            _entry(wire, messages[seq], seq, per_entry[seq], session.system_prefix_count, views)
            for seq in range(start, min(start + size, len(messages)))
        )
        context = self._sessions.context(tenant, session_id)
        return SessionInspection(
            session=_item(session),
            context_tokens=context.counted.estimate.tokens,
            curve=curve,
            compactions=tuple(views),
            entries=entries,
            page=transcript_page,
            cost=self._sessions.ledger.cost_of(tenant, session_id),
        )

    def _all_messages(self, tenant: str, session_id: str) -> list[Any]:
        messages: list[Any] = []
        while True:
            chunk, total = self._sessions.transcript(
                tenant, session_id, len(messages), _TRANSCRIPT_CHUNK
            )
            messages.extend(chunk)
            if not chunk or len(messages) >= total:
                return messages

    def _count(
        self, session: SessionView, wire: WireFormat, messages: Sequence[Any]
    ) -> CountedHistory:
        return self._sessions.estimation.count(session_history(session, wire.name, messages))

    def _message_counts(
        self, wire: WireFormat, session: SessionView, messages: Sequence[Any]
    ) -> list[int]:
        """Per-message counts with the session's tokenizer (its model decides it)."""
        if not messages:
            return []
        history = HistoryInput(messages=messages, format=wire.name, model=session.model)
        return self._sessions.estimation.count(history).per_message

    def _cost(
        self,
        wire: WireFormat,
        session: SessionView,
        record: CompactionRecord,
        messages: Sequence[Any],
    ) -> CompactionCost:
        """The summary's tokens and what the placeholders change on the kept tail."""
        summary_tokens = 0
        if record.summary:
            marker = self._sessions.marker
            recall = session.id if marker.recall_hint else None
            summary = wire.summary_message(marker.render(record.summary, recall))
            summary_tokens = self._message_counts(wire, session, [summary])[0]
        delta = 0
        cleared = record.cleared_tool_uses
        if cleared:
            start = max(record.first_kept_seq, session.system_prefix_count)
            kept = list(messages[start : record.covered_seq])
            replaced = wire.apply_cleared(kept, cleared)
            changed = [i for i, (a, b) in enumerate(zip(kept, replaced, strict=True)) if a is not b]
            before = self._message_counts(wire, session, [kept[i] for i in changed])
            after = self._message_counts(wire, session, [replaced[i] for i in changed])
            delta = sum(after) - sum(before)
        return CompactionCost(
            ordinal=record.ordinal,
            covered_seq=record.covered_seq,
            first_kept_seq=record.first_kept_seq,
            summary_tokens=summary_tokens,
            cleared_delta=delta,
            recorded_before=record.tokens_before,
            recorded_after=record.tokens_after,
        )


def _item(session: SessionView) -> SessionItem:
    return SessionItem(
        id=session.id,
        model=session.model,
        format=session.format,
        entries=session.entry_count,
        compactions=session.compaction_count,
        created_at=session.created_at,
    )


def _compaction_views(
    records: Sequence[CompactionRecord], system_prefix_count: int
) -> list[CompactionView]:
    views: list[CompactionView] = []
    previous: CompactionRecord | None = None
    for record in records:
        folded_start = max(
            previous.first_kept_seq if previous is not None else 0, system_prefix_count
        )
        summarizer = record.summarizer
        previous_summary = previous.summary if previous is not None else ""
        views.append(
            CompactionView(
                id=record.id,
                ordinal=record.ordinal,
                trigger=record.trigger,
                strategy=record.strategy,
                applied=record.applied,
                summarizer=f"{summarizer.provider} / {summarizer.model}",
                created_at=record.created_at,
                tokens_before=record.tokens_before,
                tokens_after=record.tokens_after,
                folded_start=folded_start,
                folded_end=max(folded_start, record.first_kept_seq),
                first_kept_seq=record.first_kept_seq,
                covered_seq=record.covered_seq,
                summary=record.summary,
                diff=diff_summaries(previous_summary, record.summary),
                restored_facts=tuple((f.kind, f.text) for f in record.restored_facts),
                cleared=record.cleared_tool_uses,
                instructions=record.instructions,
                current_request=record.current_request,
            )
        )
        previous = record
    return views


def _entry(
    wire: WireFormat,
    raw: Any,
    seq: int,
    tokens: int,
    system_prefix_count: int,
    compactions: Sequence[CompactionView],
) -> EntryView:
    role, parts = entry_parts(wire, raw, seq)
    state: EntryState = "kept"
    folded_by = None
    if seq < system_prefix_count:
        state = "prefix"
    else:
        folded_by = next((c.ordinal for c in compactions if seq < c.first_kept_seq), None)
        if folded_by is not None:
            state = "folded"
    return EntryView(seq, role, parts, tokens, state, folded_by)
