"""A session's context, the before-turn `prepare`, and compactions.

Database work runs in short synchronous transactions (in a worker thread when called
from async code); the summarizer call happens between them, holding no transaction. A
compaction records the base it was built on; if another one committed first, the unique
(session, ordinal) constraint refuses the second and it answers 409. A failure anywhere
writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import anyio

from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.strategy import StrategyName
from app.engine.compaction.thresholds import keep_recent_for_threshold
from app.engine.errors import IneffectiveCompactionError, NothingToCompactError
from app.engine.ports import CallerGone
from app.engine.thinking import ThinkingLevel
from app.services.compaction import CompactionOutcome, CompactionService
from app.services.cost_ledger import CostLedger
from app.services.estimation import CountedHistory, EstimationService
from app.services.history import CompactOptions, HistoryInput
from app.services.sessions.context import (
    ForwardedPrompt,
    SessionContext,
    build_context,
    compacted_context,
)
from app.services.sessions.errors import CompactionConflictError
from app.services.sessions.records import new_compaction
from app.services.sessions.stall import stall_of, waits_for_new_entries
from app.services.sessions.transactions import SessionStore
from app.services.strategies.registry import clearing_due, strategy_for
from app.store.errors import DuplicateKeyError
from app.store.views import (
    CompactionRecord,
    CompactionStall,
    LedgerEntry,
    NewCompaction,
    SessionView,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ContextView:
    """A session's context to send now, with its count."""

    context: SessionContext
    counted: CountedHistory


@dataclass(frozen=True, slots=True)
class CompactResult:
    compacted: bool
    record: CompactionRecord | None
    view: ContextView
    reason: str | None = None
    outcome: CompactionOutcome | None = None
    # Automatic compaction could not bring the context under the threshold.
    ineffective: bool = False
    warning: str | None = None


class SessionCompactor:
    def __init__(
        self,
        store: SessionStore,
        estimation: EstimationService,
        compaction: CompactionService,
        marker: SummaryMarker,
    ) -> None:
        self._store = store
        self.estimation = estimation
        self.compaction = compaction
        self.marker = marker
        # Summary calls are billed here, with the compaction that made them.
        self.ledger: CostLedger | None = None

    def compactions(self, tenant: str, session_id: str) -> list[CompactionRecord]:
        """Every compaction record of the session, oldest first."""
        with self._store.transaction() as tx:
            self._store.require(tx, tenant, session_id)
            return tx.compactions.all(session_id)

    def load_context(
        self, tenant: str, session_id: str, prompt: ForwardedPrompt | None = None
    ) -> SessionContext:
        with self._store.transaction() as tx:
            session = self._store.require(tx, tenant, session_id)
            latest = tx.compactions.latest(session_id)
            prefix = tx.transcript.page(session_id, 0, session.system_prefix_count)
            kept = tx.transcript.from_seq(
                session_id, latest.first_kept_seq if latest is not None else 0
            )
        context = build_context(session, latest, prefix, kept, self.marker)
        return replace(context, prompt=prompt) if prompt is not None else context

    def context(
        self, tenant: str, session_id: str, prompt: ForwardedPrompt | None = None
    ) -> ContextView:
        """The context to send now, with its estimate (counted with `prompt`'s system
        prompt and tools when a proxied request forwards its own)."""
        context = self.load_context(tenant, session_id, prompt)
        return ContextView(context, self.estimation.count(context.history()))

    async def prepare(
        self,
        tenant: str,
        session_id: str,
        caller_gone: CallerGone = lambda: False,
        prompt: ForwardedPrompt | None = None,
    ) -> CompactResult:
        """The before-turn hook: estimate; compact when over the threshold; the context.

        When compaction cannot bring the context under the threshold, the answer says so
        and automatic compaction pauses until new entries arrive (no call on every turn).
        """
        view = await _in_thread(self.context, tenant, session_id, prompt)
        session = view.context.session
        settings = session.settings
        strategy = strategy_for(settings.strategy, view.counted)
        clearing = clearing_due(view.counted, strategy, settings.effective_clear)
        if not view.counted.should_compact and not clearing:
            return CompactResult(compacted=False, record=None, view=view, reason="under threshold")
        entry_count = session.entry_count
        if waits_for_new_entries(session.compaction_stall, entry_count):
            warning = stall_of(view.context, view.counted, entry_count).warning
            return CompactResult(
                compacted=False,
                record=None,
                view=view,
                reason="automatic compaction paused until new messages arrive",
                ineffective=True,
                warning=warning,
            )
        try:
            result = await self._compact(
                view.context, "auto", None, None, caller_gone, force=False, counted=view.counted
            )
        except IneffectiveCompactionError as exc:
            result = CompactResult(compacted=False, record=None, view=view, reason=str(exc))
        if result.view.counted.should_compact:
            stall = stall_of(result.view.context, result.view.counted, entry_count)
            await _in_thread(self._set_stall, session, stall)
            return replace(result, ineffective=True, warning=stall.warning)
        if session.compaction_stall is not None:
            await _in_thread(self._set_stall, session, None)
        return result

    def _set_stall(self, session: SessionView, stall: CompactionStall | None) -> None:
        with self._store.transaction() as tx:
            self._store.require(tx, session.tenant, session.id)
            tx.sessions.set_stall(session.id, stall)

    async def compact(
        self,
        tenant: str,
        session_id: str,
        trigger: str,
        instructions: str | None,
        thinking: ThinkingLevel | None,
        caller_gone: CallerGone = lambda: False,
        strategy: StrategyName | None = None,
        prompt: ForwardedPrompt | None = None,
    ) -> CompactResult:
        """A manual or overflow compaction, regardless of the threshold; 409 if nothing."""
        context = await _in_thread(self.load_context, tenant, session_id, prompt)
        result = await self._compact(
            context, trigger, instructions, thinking, caller_gone, force=True, strategy=strategy
        )
        if not result.compacted:
            raise NothingToCompactError(result.reason or "nothing to compact")
        return result

    async def _compact(
        self,
        context: SessionContext,
        trigger: str,
        instructions: str | None,
        thinking: ThinkingLevel | None,
        caller_gone: CallerGone,
        *,
        force: bool,
        strategy: StrategyName | None = None,
        counted: CountedHistory | None = None,
    ) -> CompactResult:
        """Compacts `context` (already counted as `counted` when given) and records it;
        the new context is built from the outcome, not read and counted again."""
        session = context.session
        settings = session.settings
        options = CompactOptions(
            force=force,
            trigger=trigger,
            instructions=instructions,
            thinking=thinking or settings.thinking,
            strategy=strategy or settings.strategy,
            clear=settings.effective_clear,
            pinned=settings.pinned,
            subject={"session_id": session.id},
        )
        history = context.history()
        if settings.keep_recent_tokens is None:
            history, counted = await self._scaled_keep(history, counted)
        outcome = await self.compaction.compact(history, options, caller_gone, counted)
        if not outcome.compacted:
            view = ContextView(context, outcome.counted)
            return CompactResult(compacted=False, record=None, view=view, reason=outcome.reason)
        new = new_compaction(context, outcome, trigger, instructions)
        billed = self._summary_bill(context.session, outcome)
        record = await _in_thread(self._record, context.session, new, billed)
        if billed is not None and self.ledger is not None:
            self.ledger.observed(billed)
        view = _compacted_view(context, outcome, record)
        return CompactResult(compacted=True, record=record, view=view, outcome=outcome)

    async def _scaled_keep(
        self, history: HistoryInput, counted: CountedHistory | None
    ) -> tuple[HistoryInput, CountedHistory]:
        """`history` keeping at most a quarter of its threshold verbatim, as transparent
        mode does, unless the model's policy sets `keep_recent_tokens`: with the default
        20,000 against a 64k window's 31,232 threshold, the context stays over the
        threshold after compacting and every turn pays for another summary."""
        if counted is None:
            counted = await _in_thread(self.estimation.count, history)
        if self.estimation.policy_for(history.model).keep_recent_tokens is not None:
            return history, counted
        keep = keep_recent_for_threshold(counted.threshold, counted.settings.keep_recent_tokens)
        return replace(history, keep_recent_tokens=keep), counted

    def _summary_bill(self, session: SessionView, outcome: CompactionOutcome) -> LedgerEntry | None:
        """The ledger entry of the summary calls that made `outcome` (None: no call)."""
        summary, summarizer = outcome.summary, outcome.summarizer
        if self.ledger is None or summary is None or summarizer is None:
            return None
        info = summarizer.info
        return self.ledger.summarizer_entry(
            session.tenant, session.id, info.provider, info.model, summary.usage
        )

    def _record(
        self, session: SessionView, new: NewCompaction, billed: LedgerEntry | None = None
    ) -> CompactionRecord:
        try:
            with self._store.transaction() as tx:
                self._store.require(tx, session.tenant, session.id)
                record = tx.compactions.add(new)
                if billed is not None:
                    tx.ledger.add(billed)
                return record
        except DuplicateKeyError as exc:
            raise CompactionConflictError(
                "another compaction of this session finished first from the same history; "
                "fetch the context again and retry if still needed"
            ) from exc


def _compacted_view(
    context: SessionContext, outcome: CompactionOutcome, record: CompactionRecord
) -> ContextView:
    """The context `record` leaves, with its count, from the compaction's outcome."""
    messages, counted = outcome.messages, outcome.counted_after
    assert messages is not None and counted is not None
    plan = outcome.plan
    if plan is not None and outcome.summary is not None:
        # [inline system…] + [summary] + the entries from the cut.
        inline = counted.inline_system_count
        seqs = [*context.seqs[:inline], None, *context.seqs[plan.cut_index :]]
    else:
        # Tool results cleared in place: the same entries.
        seqs = list(context.seqs)
    return ContextView(compacted_context(context, record, list(messages), seqs), counted)


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    return await anyio.to_thread.run_sync(fn, *args)
