"""A session's context, the before-turn `prepare`, and compactions.

Database work runs in short synchronous transactions (in a worker thread when called
from async code); the summarizer call happens between them, holding no transaction. A
compaction records the base it was built on; if another one committed first, the unique
(session, ordinal) constraint refuses the second and it answers 409. A failure anywhere
writes nothing.

Automatic compactions (`prepare`) hold a lease on the session while they summarize, so
a bound proxy request can wait for a compaction another replica is running and use its
result instead of summarizing the same history again or answering 409.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, TypeVar

import anyio

from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.orchestration import CompactionPlan
from app.engine.compaction.strategy import StrategyName
from app.engine.compaction.thresholds import keep_recent_for_threshold
from app.engine.errors import (
    CompactorError,
    IneffectiveCompactionError,
    NothingToCompactError,
    SummarizerError,
)
from app.engine.ports import CallerGone, ChunkProgress
from app.engine.thinking import ThinkingLevel
from app.services.compaction import CompactionOutcome, CompactionService
from app.services.compaction_log import log_compaction, log_prepared_summary
from app.services.cost_ledger import CostLedger
from app.services.estimation import CountedHistory, EstimationService
from app.services.history import CompactOptions, HistoryInput
from app.services.sessions.context import (
    ForwardedPrompt,
    SessionContext,
    build_context,
    compacted_context,
    with_pending,
)
from app.services.sessions.errors import CompactionConflictError, StoreUnavailableError
from app.services.sessions.prepare_ahead import (
    PreparedCompaction,
    SessionPrepareAhead,
    kept_ahead,
)
from app.services.sessions.records import new_compaction, preview_record
from app.services.sessions.stall import base_of, stall_of, waits_for_new_entries
from app.services.sessions.transactions import SessionStore
from app.services.strategies.registry import clearing_due, strategy_for
from app.store.errors import DuplicateKeyError, StoreError
from app.store.transactions import StoreTransaction
from app.store.views import (
    CompactionRecord,
    CompactionStall,
    LedgerEntry,
    NewCompaction,
    SessionView,
)

T = TypeVar("T")

# Writes more in the transaction that adds a compaction record (an asynchronous job's
# outcome): the record and what depends on it commit together or not at all.
OnRecorded = Callable[[StoreTransaction, CompactionRecord], None]

# How long a compaction's lease lasts unless renewed (its holder renews it every third
# of that while the summary runs): a crashed holder's lease runs out after it, and
# automatic compaction of the session resumes.
DEFAULT_COMPACTION_LEASE = timedelta(seconds=30)
# How often a request waiting for another replica's compaction looks again.
LEASE_POLL_SECONDS = 0.1


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
    # The transcript entries (first, last seq) this compaction folded into its summary.
    folded: tuple[int, int] | None = None
    # What the turn that crossed the threshold found prepared ahead (SPEC §16): ready,
    # pending (forwarded uncompacted) or waited; None when nothing was prepared.
    prepared: str | None = None


class SessionCompactor:
    def __init__(
        self,
        store: SessionStore,
        estimation: EstimationService,
        compaction: CompactionService,
        marker: SummaryMarker,
        lease: timedelta = DEFAULT_COMPACTION_LEASE,
    ) -> None:
        self._store = store
        self._lease = lease
        self.estimation = estimation
        self.compaction = compaction
        self.marker = marker
        # Summary calls are billed here, with the compaction that made them.
        self.ledger: CostLedger | None = None
        # Compactions prepared ahead of the threshold (SPEC §16); None: off.
        self.ahead: SessionPrepareAhead | None = None

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
            context = self.read_context(tx, session)
        return replace(context, prompt=prompt) if prompt is not None else context

    def read_context(self, tx: StoreTransaction, session: SessionView) -> SessionContext:
        """The session's context as `tx` sees it."""
        latest = tx.compactions.latest(session.id)
        prefix = tx.transcript.page(session.id, 0, session.system_prefix_count)
        kept = tx.transcript.from_seq(
            session.id, latest.first_kept_seq if latest is not None else 0
        )
        return build_context(session, latest, prefix, kept, self.marker)

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
        wait_seconds: float = 0.0,
        *,
        dry_run: bool = False,
    ) -> CompactResult:
        """The before-turn hook: estimate; compact when over the threshold; the context.

        When compaction cannot bring the context under the threshold, the answer says so
        and automatic compaction pauses until new entries arrive (no call on every turn).

        The compaction holds the session's lease (one summary at a time across replicas).
        With `wait_seconds`, a compaction someone else is running is waited for (that long
        at most) and its result used; past that, the context is answered as it is. With
        none, this compacts anyway (two compactions on one base: the second gets 409).
        With `dry_run`, the answer is what would happen, and nothing is written.
        """
        if dry_run:
            # What would happen: no lease is taken (that is a write too).
            view = await _in_thread(self.context, tenant, session_id, prompt)
            waived = self._not_due(view)
            return waived or await self._compact_due(view, caller_gone, dry_run=True)
        deadline = time.monotonic() + wait_seconds
        owner = str(uuid.uuid4())
        while True:
            view = await _in_thread(self.context, tenant, session_id, prompt)
            waived = self._not_due(view)
            if waived is not None:
                self._start_ahead(view)
                return waived
            session = view.context.session
            leased = await _in_thread(self._take_lease, session, owner)
            if leased or wait_seconds <= 0:
                break
            if time.monotonic() >= deadline or caller_gone():
                return CompactResult(
                    compacted=False,
                    record=None,
                    view=view,
                    reason="another compaction of this session is still running",
                )
            await self._wait_for_lease(session, deadline, caller_gone)
        renewing = threading.Event()
        if leased:
            # Renewed while the summary runs: the lease can be short, so a crashed
            # holder's lease runs out soon and the session compacts again.
            threading.Thread(
                target=self._keep_lease, args=(session, owner, renewing), daemon=True
            ).start()
        try:
            return await self._compact_or_use_prepared(view, caller_gone)
        finally:
            renewing.set()
            if leased:
                # Even when the request is cancelled: a lease left behind would make the
                # session's next requests wait for it to run out.
                with anyio.CancelScope(shield=True):
                    await _in_thread(self._release_lease, session, owner)

    async def preview_turn(
        self,
        tenant: str,
        session_id: str,
        fresh_of: Callable[[list[Any]], list[Any]],
        prompt: ForwardedPrompt | None = None,
        caller_gone: CallerGone = lambda: False,
    ) -> tuple[ContextView, CompactResult]:
        """A bound proxied turn as a dry run: the context it forwards (the session's, with
        the request's new messages, `fresh_of` the stored ones, after it in memory) and
        what `prepare` would do to it. Nothing is written: no entry, lease or record."""

        def read() -> ContextView:
            context = self.load_context(tenant, session_id, prompt)
            pending = with_pending(context, fresh_of(context.messages))
            return ContextView(pending, self.estimation.count(pending.history()))

        view = await _in_thread(read)
        waived = self._not_due(view)
        if waived is not None:
            return view, waived
        try:
            return view, await self._compact_due(view, caller_gone, dry_run=True)
        except SummarizerError as exc:
            # What the turn would do: fail open, forwarded uncompacted.
            reason = f"compaction would fail (forwarded uncompacted): {type(exc).__name__}"
            return view, CompactResult(compacted=False, record=None, view=view, reason=reason)

    def _not_due(self, view: ContextView) -> CompactResult | None:
        """The answer when no automatic compaction is due (None: it is)."""
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
        return None

    async def _compact_due(
        self, view: ContextView, caller_gone: CallerGone, *, dry_run: bool = False
    ) -> CompactResult:
        session = view.context.session
        entry_count = session.entry_count
        # The bases summarized (the last is the deepest cut tried), for the stall.
        tried: list[str] = []
        try:
            result = await self._compact(
                view.context,
                "auto",
                None,
                None,
                caller_gone,
                force=False,
                counted=view.counted,
                dry_run=dry_run,
                tried=tried,
            )
        except IneffectiveCompactionError as exc:
            result = CompactResult(compacted=False, record=None, view=view, reason=str(exc))
        if dry_run:
            return result
        if result.view.counted.should_compact:
            base = tried[-1] if tried else None
            stall = stall_of(result.view.context, result.view.counted, entry_count, base)
            await _in_thread(self._set_stall, session, stall)
            return replace(result, ineffective=True, warning=stall.warning)
        if session.compaction_stall is not None:
            await _in_thread(self._set_stall, session, None)
        return result

    # --- Prepared ahead (SPEC §16; what is kept and when: sessions.prepare_ahead) ---

    def _start_ahead(self, view: ContextView, *, crossing: bool = False) -> bool:
        """Starts preparing the session's next compaction in the background when its
        context is past the soft threshold (and under the threshold, unless this is the
        `crossing` turn); True when it started."""
        ahead = self.ahead
        context, counted = view.context, view.counted
        if ahead is None or (counted.should_compact and not crossing):
            return False
        if not ahead.due(context, counted):
            return False
        latest = context.latest
        base = latest.ordinal if latest is not None else 0

        async def work() -> bool:
            started = time.perf_counter()
            try:
                outcome = await self._compact_ahead(context, counted)
            except Exception:
                ahead.observer.prepared_summary("failed")
                raise
            if outcome is None:
                ahead.observer.prepared_summary("nothing_to_compact")
                return True
            seconds = time.perf_counter() - started
            prepared = PreparedCompaction(base, context.session.settings, context, outcome)
            ahead.keep(prepared, seconds)
            info = self.compaction.summarizer.info
            log_prepared_summary(
                outcome.counted,
                subject={"session_id": context.session.id},
                tokens_after=outcome.tokens_after,
                summarizer=f"{info.provider}/{info.model}",
                duration_ms=seconds * 1000,
                summarized_messages=outcome.plan.cut_index if outcome.plan else None,
            )
            return True

        return ahead.start(context, work)

    async def _compact_ahead(
        self, context: SessionContext, counted: CountedHistory
    ) -> CompactionOutcome | None:
        """The compaction the threshold will call for, made now: it keeps less of the
        tail, by as much as the history will have grown by then, so it folds the prefix
        that compaction would. Billed now (the call happened, used or not)."""
        history = context.history()
        if context.session.settings.keep_recent_tokens is None:
            history, counted = await self._scaled_keep(history, counted)
        keep = history.keep_recent_tokens or counted.settings.keep_recent_tokens
        # Parsed: the cut ahead reads the turns (and the compaction needs them anyway).
        counted = await _in_thread(self.estimation.parsed, history, counted)
        history = replace(history, keep_recent_tokens=kept_ahead(keep, counted))
        counted = self.estimation.resettled(history, counted)
        options = self._options(context.session, "prepare_ahead", None, None, force=True)
        outcome = await self.compaction.compact(history, options, lambda: False, counted)
        if not outcome.compacted or outcome.plan is None or outcome.summary is None:
            return None
        billed = self._summary_bill(context.session, outcome)
        if billed is not None and self.ledger is not None:
            await _in_thread(self._bill, context.session, billed)
            self.ledger.observed(billed)
        return outcome

    async def _compact_or_use_prepared(
        self, view: ContextView, caller_gone: CallerGone
    ) -> CompactResult:
        """The due compaction: the one prepared ahead when it is ready and still applies;
        while it is being made, the context as it is when that still fits the model's
        window, else the prepared one after a bounded wait; inline otherwise."""
        ahead, context = self.ahead, view.context
        if ahead is None or not view.counted.should_compact:
            return await self._compact_due(view, caller_gone)
        prepared = Prepared.READY
        if ahead.running(context):
            if _fits_window(view):
                return CompactResult(
                    compacted=False,
                    record=None,
                    view=view,
                    reason="the compaction prepared ahead is not ready; the context still fits",
                    prepared=Prepared.PENDING,
                )
            await ahead.wait(context)
            prepared = Prepared.WAITED
        kept = ahead.take(context)
        if kept is not None:
            result = await self._record_prepared(view, kept)
            if result is not None:
                return replace(result, prepared=prepared)
            ahead.give_back(kept)
        elif prepared is Prepared.READY and self._started_at_crossing(view):
            return CompactResult(
                compacted=False,
                record=None,
                view=view,
                reason="the compaction prepared ahead started at the threshold; the context "
                "still fits",
                prepared=Prepared.PENDING,
            )
        result = await self._compact_due(view, caller_gone)
        return replace(result, prepared=prepared) if prepared is Prepared.WAITED else result

    def _started_at_crossing(self, view: ContextView) -> bool:
        """True when the pace had held back the start of this session's compaction
        expecting the threshold later, and this crossing turn started it instead: the
        context still fits the model's window, so it goes on as if the compaction had been
        running (`pending`) rather than waiting for an inline one. Not with a summarizer
        of this process (extractive): the inline compaction takes milliseconds, and the
        turn gets its context compacted."""
        ahead = self.ahead
        if ahead is None or self.compaction.summarizer.info.local:
            return False
        if not ahead.held_back(view.context) or not _fits_window(view):
            return False
        return self._start_ahead(view, crossing=True)

    async def _record_prepared(
        self, view: ContextView, kept: PreparedCompaction
    ) -> CompactResult | None:
        """Records `kept` on `view`'s context, with no summarizer call: its summary and
        kept entries, then every entry added since. None when that would leave the
        context over the threshold (the caller compacts inline)."""
        started = time.perf_counter()
        context, outcome = view.context, kept.outcome
        before = kept.context
        grown = len(before.seqs)
        if context.seqs[:grown] != before.seqs or outcome.messages is None:
            return None
        assert outcome.plan is not None and outcome.counted_after is not None
        inline = outcome.counted_after.inline_system_count
        messages = [*outcome.messages, *context.messages[grown:]]
        seqs = [*before.seqs[:inline], None, *before.seqs[outcome.plan.cut_index :]]
        seqs += context.seqs[grown:]
        history = replace(context.history(), messages=messages, usage=(), estimate_floor=0)
        counted = await _in_thread(self.estimation.count, history)
        if counted.should_compact:
            return None
        new = new_compaction(before, outcome, "auto", None)
        new = replace(
            new,
            tokens_before=view.counted.estimate.tokens,
            tokens_after=counted.estimate.tokens,
            covered_seq=max(s for s in context.seqs if s is not None) + 1,
        )
        record = await _in_thread(self._record, context.session, new)
        if context.session.compaction_stall is not None:
            await _in_thread(self._set_stall, context.session, None)
        info = self.compaction.summarizer.info
        log_compaction(
            view.counted,
            tokens_after=counted.estimate.tokens,
            trigger="auto",
            strategy=outcome.strategy,
            applied=tuple(step.value for step in outcome.applied),
            summarizer=f"{info.provider}/{info.model}",
            duration_ms=(time.perf_counter() - started) * 1000,
            subject={"session_id": context.session.id},
            summarized_messages=outcome.plan.cut_index - inline,
            prepared_ahead=True,
            prepared=Prepared.READY,
        )
        compacted = compacted_context(context, record, messages, seqs)
        return CompactResult(
            compacted=True,
            record=record,
            view=ContextView(compacted, counted),
            outcome=outcome,
            folded=_folded(context, record),
        )

    def _bill(self, session: SessionView, billed: LedgerEntry) -> None:
        with self._store.transaction() as tx:
            self._store.require(tx, session.tenant, session.id)
            tx.ledger.add(billed)

    def _take_lease(self, session: SessionView, owner: str) -> bool:
        now = datetime.now(UTC)
        with self._store.transaction() as tx:
            return tx.sessions.take_compaction_lease(session.id, owner, now, now + self._lease)

    def _keep_lease(self, session: SessionView, owner: str, done: threading.Event) -> None:
        """Renews `owner`'s lease every third of its length until `done`."""
        while not done.wait(self._lease.total_seconds() / 3):
            now = datetime.now(UTC)
            # A store that failed now is tried again next time (or the lease runs out).
            with contextlib.suppress(CompactorError, StoreError), self._store.transaction() as tx:
                tx.sessions.renew_compaction_lease(session.id, owner, now + self._lease)

    def _release_lease(self, session: SessionView, owner: str) -> None:
        # A store that failed now lets the lease run out instead.
        with contextlib.suppress(CompactorError, StoreError), self._store.transaction() as tx:
            tx.sessions.release_compaction_lease(session.id, owner)

    async def _wait_for_lease(
        self, session: SessionView, deadline: float, caller_gone: CallerGone
    ) -> None:
        """Until the running compaction ends (its lease released or run out, or a new
        record written), the deadline passes or the caller hangs up."""
        while time.monotonic() < deadline and not caller_gone():
            await anyio.sleep(LEASE_POLL_SECONDS)
            try:
                state = await _in_thread(self._lease_state, session)
            except StoreUnavailableError:
                # The store is away (a restart): wait on; the deadline still holds.
                continue
            if state is None:
                return
            until, count = state
            if until is None or until <= datetime.now(UTC) or count != session.compaction_count:
                return

    def _lease_state(self, session: SessionView) -> tuple[datetime | None, int] | None:
        with self._store.transaction() as tx:
            return tx.sessions.compaction_lease(session.id)

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
        *,
        dry_run: bool = False,
        progress: ChunkProgress | None = None,
        on_recorded: OnRecorded | None = None,
    ) -> CompactResult:
        """A manual or overflow compaction, regardless of the threshold; 409 if nothing.
        With `dry_run`, what it would record, writing nothing. `progress` is told of each
        chunk folded; `on_recorded` writes more in the transaction of the record."""
        context = await _in_thread(self.load_context, tenant, session_id, prompt)
        result = await self._compact(
            context,
            trigger,
            instructions,
            thinking,
            caller_gone,
            force=True,
            strategy=strategy,
            dry_run=dry_run,
            progress=progress,
            on_recorded=on_recorded,
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
        dry_run: bool = False,
        progress: ChunkProgress | None = None,
        on_recorded: OnRecorded | None = None,
        tried: list[str] | None = None,
    ) -> CompactResult:
        """Compacts `context` (already counted as `counted` when given) and records it
        (with `dry_run`, only shows the record); the new context is built from the
        outcome, not read and counted again. The base of every summary planned is added
        to `tried`; one the session's stall names is not summarized again."""
        session = context.session
        settings = session.settings
        stall = session.compaction_stall

        def skip(plan: CompactionPlan) -> str | None:
            base = base_of(context, plan.cut_index)
            if tried is not None:
                tried.append(base)
            if force or stall is None or stall.base != base:
                return None
            return (
                "a summary of these same messages left the context over the threshold "
                "before; waiting for new messages to move the cut"
            )

        options = replace(
            self._options(
                session, trigger, instructions, thinking, force, strategy, progress=progress
            ),
            skip_summary=skip,
        )
        history = context.history()
        if settings.keep_recent_tokens is None:
            history, counted = await self._scaled_keep(history, counted)
        outcome = await self.compaction.compact(history, options, caller_gone, counted)
        if not outcome.compacted:
            view = ContextView(context, outcome.counted)
            return CompactResult(compacted=False, record=None, view=view, reason=outcome.reason)
        new = new_compaction(context, outcome, trigger, instructions)
        if dry_run:
            record = preview_record(new)
        else:
            billed = self._summary_bill(context.session, outcome)
            record = await _in_thread(self._record, context.session, new, billed, on_recorded)
            if billed is not None and self.ledger is not None:
                self.ledger.observed(billed)
        view = _compacted_view(context, outcome, record)
        return CompactResult(
            compacted=True,
            record=record,
            view=view,
            outcome=outcome,
            folded=_folded(context, record),
        )

    def _options(
        self,
        session: SessionView,
        trigger: str,
        instructions: str | None,
        thinking: ThinkingLevel | None,
        force: bool,
        strategy: StrategyName | None = None,
        progress: ChunkProgress | None = None,
    ) -> CompactOptions:
        settings = session.settings
        return CompactOptions(
            force=force,
            trigger=trigger,
            instructions=instructions,
            thinking=thinking or settings.thinking,
            strategy=strategy or settings.strategy,
            clear=settings.effective_clear,
            pinned=settings.pinned,
            subject={"session_id": session.id},
            recall_session=session.id if self.marker.recall_hint else None,
            progress=progress,
            # Automatic, overflow and prepared-ahead compactions cut deeper once rather
            # than leave the context over the threshold (a manual one does as asked).
            deepen=trigger != "manual",
        )

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
        self,
        session: SessionView,
        new: NewCompaction,
        billed: LedgerEntry | None = None,
        on_recorded: OnRecorded | None = None,
    ) -> CompactionRecord:
        try:
            with self._store.transaction() as tx:
                self._store.require(tx, session.tenant, session.id)
                record = tx.compactions.add(new)
                if billed is not None:
                    tx.ledger.add(billed)
                if on_recorded is not None:
                    on_recorded(tx, record)
                return record
        except DuplicateKeyError as exc:
            raise CompactionConflictError(
                "another compaction of this session finished first from the same history; "
                "fetch the context again and retry if still needed"
            ) from exc


class Prepared(StrEnum):
    """What the turn that crossed the threshold found (X-Compactor-Prepared)."""

    READY = "ready"
    PENDING = "pending"
    WAITED = "waited"


def _fits_window(view: ContextView) -> bool:
    """True when the uncompacted context still fits the model's window with the
    request's output budget (none named: 0, as for the proxy's stateless callers)."""
    prompt, counted = view.context.prompt, view.counted
    budget = prompt.output_budget if prompt is not None else 0
    return counted.estimate.tokens <= counted.settings.effective_window - budget


def _folded(context: SessionContext, record: CompactionRecord) -> tuple[int, int] | None:
    """The entries `record` folds: from where the context's kept entries started."""
    latest, prefix = context.latest, context.session.system_prefix_count
    start = max(latest.first_kept_seq, prefix) if latest is not None else prefix
    return (start, record.first_kept_seq - 1) if record.first_kept_seq > start else None


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
