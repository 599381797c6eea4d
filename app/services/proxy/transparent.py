"""Transparent compaction of a proxied request (SPEC §10): estimate with the registry
window of the request's model; over the threshold, compact with the configured
summarizer; reuse the summary of a prefix the caller already had summarized.

What is forwarded after a compaction is `[inline system…] + [summary] + kept tail`; the
next turn of a stateless caller resends the same prefix, finds its summary in the cache
and forwards the same compacted history plus its new messages — no summarizer call, and
a stable prefix for the upstream's own prompt cache.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from app.engine.compaction.thresholds import DEFAULT_KEEP_RECENT_TOKENS
from app.engine.errors import IneffectiveCompactionError, InvalidHistoryError, SummarizerError
from app.json_logging import log_event
from app.services.compaction import CompactionService
from app.services.compaction_log import log_compaction, window_source
from app.services.cost_ledger import CostLedger
from app.services.estimation import CountedHistory, EstimationService
from app.services.history import CompactOptions, HistoryInput, request_history
from app.services.ports import ResendMemo
from app.services.proxy.ahead_leases import Taken
from app.services.proxy.cached_conversation import (
    CachedConversation,
    IneffectiveMemory,
    SummaryBase,
    with_summary,
)
from app.services.proxy.call import ProxyCall, ProxyMode
from app.services.proxy.observer import ProxyObserver
from app.services.proxy.pipeline import Exchange
from app.services.proxy.prepare_ahead import AheadJob, PrepareAhead, Prepared
from app.services.proxy.report import CompactionPreview, ProxyReport
from app.services.proxy.resend_memo import ResendMemos, compacted_resend, rebuilt_history
from app.services.proxy.summary_cache import (
    CachedSummary,
    PrefixHashes,
    PrefixMemo,
    SummaryCache,
    scope_key,
)
from app.services.tracing import NullTracer, Tracer

log = logging.getLogger("compactor.proxy")
# The kept tail is at most this fraction of the threshold (1/4): small windows get a
# tail that fits, large ones the default keep_recent_tokens.
KEEP_RECENT_SHARE = 4


def kept_tail_tokens(basis: int) -> int:
    """The verbatim tail a compaction keeps of a history whose threshold (or, after an
    overflow, whose size) is `basis`: it must leave room under the threshold, or the
    next turn compacts again."""
    return min(DEFAULT_KEEP_RECENT_TOKENS, max(1, basis // KEEP_RECENT_SHARE))


def history_of(call: ProxyCall, body: dict[str, Any]) -> HistoryInput | None:
    """The request's history and what decides its threshold: the registry window of its
    model, its reserve (the model policy's, else the default) raised by the request's
    output budget. (The reserve was once set here to the default, which overrode the
    operator's per-model reserve: a 40k window with a 4k reserve compacted at 7,232
    tokens instead of 34,000.)"""
    envelope = call.envelope if body is call.body else call.api.envelope(body, call.path_params)
    if envelope is None or envelope.history is None:
        return None
    return replace(
        request_history(call.api.format, envelope, envelope.history),
        output_budget=envelope.output_budget,
    )


@dataclass(eq=False)
class TransparentCompactor:
    """Compacts proxied histories over their threshold, through the summary cache."""

    estimation: EstimationService
    compaction: CompactionService
    cache: SummaryCache
    observer: ProxyObserver
    memos: ResendMemo = field(default_factory=ResendMemos)
    tracer: Tracer = field(default_factory=NullTracer)
    # Summaries prepared ahead of the threshold (SPEC §16); None: compaction inline.
    ahead: PrepareAhead | None = None
    ledger: CostLedger | None = None
    _prefix_memo: PrefixMemo = field(init=False)

    def __post_init__(self) -> None:
        self._prefix_memo = self.ahead.memo if self.ahead is not None else PrefixMemo()

    async def apply(
        self,
        call: ProxyCall,
        body: dict[str, Any],
        report: ProxyReport,
        *,
        trigger: str = "auto",
        counted_by: Exchange | None = None,
        defer: bool = True,
    ) -> dict[str, Any] | None:
        """The body to forward (None: forward `body` as it is). `trigger` overflow
        compacts whatever the estimate says. An earlier stage's count of the same history
        (`counted_by`) is reused, not made again. `defer=False`: over the threshold, no
        waiting for a summary prepared ahead (it was waited for already)."""
        api = call.api
        wanted = history_of(call, body)
        if wanted is None:
            return None
        known = counted_by.count_of(wanted.messages) if counted_by is not None else None
        started = time.perf_counter()
        try:
            with self.tracer.span("count", attributes={"compactor.api": api.name}) as span:
                counted = (
                    self.estimation.resettled(wanted, known)
                    if known is not None
                    else self.estimation.count(wanted)
                )
                span.set_attribute("compactor.tokens", counted.estimate.tokens)
                span.set_attribute("compactor.threshold", counted.threshold)
        except InvalidHistoryError as exc:
            # The upstream is the judge of what it accepts; the proxy only steps aside.
            report.note = f"history not compactable: {exc.where or 'body'}"
            return None
        report.tokens_before = report.tokens_after = counted.estimate.tokens
        report.model, report.threshold = wanted.model, counted.threshold
        report.model_known = counted.model_known
        report.window_source = window_source(counted)
        overflow = trigger == "overflow"
        pace_key = None
        if self.ahead is not None and not overflow:
            pace_key = self.ahead.pace_key(call.tenant, api.name, counted)
            if pace_key is not None:
                self.ahead.pace.observe(pace_key, counted.estimate.tokens)
        if not overflow and not counted.should_compact:
            await self.memos.remember_under_threshold(api.name, call.raw, counted.estimate.tokens)
            if self._ahead_due(pace_key, counted):
                await self._prepare_under_threshold(call, wanted, counted)
            return None
        history = list(wanted.messages)
        inline = counted.inline_system_count
        # After an overflow the upstream's window is smaller than the registry's: keep a
        # share of what was sent instead.
        basis = counted.estimate.tokens if overflow else counted.threshold
        wanted = replace(wanted, keep_recent_tokens=kept_tail_tokens(basis))
        conversation = self._conversation(call, wanted, counted, history)
        hit = await self._lookup(call, conversation)
        forwarded = None
        before = counted
        if hit is not None:
            working = with_summary(history, inline, hit)
            wanted = replace(wanted, messages=working)
            counted = self.estimation.count(wanted)
            older = None
            if not overflow:
                older = self._older_in_use(call, (conversation, history, inline), hit, wanted)
            if older is not None:
                hit, working, counted = older
                wanted = replace(wanted, messages=working)
            forwarded = api.with_cache_breakpoints(body, api.with_history(body, working), inline)
            report.compacted = report.cache_hit = True
            report.tokens_after = counted.estimate.tokens
            if not overflow and not counted.should_compact:
                if older is None:
                    report.prepared = self._prepared_used(api.name, conversation, hit)
                if self.ahead is not None:
                    prefix_hash = conversation.prefixes.at(hit.prefix_len)
                    self.ahead.in_use(self._ahead_key(conversation), prefix_hash, hit)
                await self._remember_compacted(call, history, working, report)
                self._log_cached(
                    call, before, counted.estimate.tokens, hit, started, trigger, report.prepared
                )
                if self._ahead_due(pace_key, counted):
                    await self._prepare_ahead(call, wanted, conversation, history, before, hit)
                return forwarded
        if not overflow and self.ahead is not None and defer:
            deferred = await self._not_ready(
                call, body, (wanted, counted), (conversation, history, before), hit, report
            )
            if deferred is not None:
                return deferred.body
        base = SummaryBase(inline, hit)
        refused = None
        if not overflow:
            refused = await anyio.to_thread.run_sync(conversation.known_ineffective)
        ineffective = IneffectiveMemory(base, refused)
        options = CompactOptions(
            force=overflow,
            trigger=trigger,
            skip_summary=ineffective.skip,
            subject={"api": api.name, "tenant": call.tenant},
        )
        try:
            # The count made above is the compaction's: it is not made again.
            outcome = await self.compaction.compact(
                wanted, options, call.caller_gone, counted=counted
            )
        except (SummarizerError, IneffectiveCompactionError) as exc:
            # Fail open: the upstream may still take the history; a summary is an aid.
            report.note = f"compaction failed: {type(exc).__name__}"
            log.warning("proxy compaction failed open", extra={"error": type(exc).__name__})
            planned = ineffective.planned
            if isinstance(exc, IneffectiveCompactionError) and planned is not None:
                await anyio.to_thread.run_sync(
                    conversation.store_ineffective, base.covered(planned)
                )
            return None if overflow else forwarded
        if not outcome.compacted or outcome.plan is None or outcome.messages is None:
            report.note = outcome.reason
            # After an overflow, what was already sent would only overflow again.
            return None if overflow else forwarded
        summarized = base.entry(outcome.plan, counted, outcome.messages)
        await anyio.to_thread.run_sync(conversation.store, summarized)
        if self.ledger is not None and outcome.summary is not None and outcome.summarizer:
            # A stateless summary is billed to the tenant (bound requests never get here).
            await self.ledger.summary_call(
                call.tenant, outcome.summarizer.info, outcome.summary.usage
            )
        self.observer.proxy_compacted(api.name, trigger)
        report.compacted = True
        report.tokens_after = outcome.tokens_after
        forwarded = api.with_cache_breakpoints(
            body, api.with_history(body, outcome.messages), inline
        )
        if not overflow:
            await self._remember_compacted(call, history, outcome.messages, report)
        return forwarded

    async def preview(self, call: ProxyCall, body: dict[str, Any]) -> CompactionPreview:
        """What `apply` would do to `body` on a turn with no summary prepared ahead,
        writing nothing: the summary cache is read, never filled; no memo, no background
        summary, no bill. Over the threshold the summarizer runs (the tokens after are
        its summary's), as `dry_run` does on a session's `prepare`."""
        wanted = history_of(call, body)
        if wanted is None:
            return CompactionPreview(False, reason="the request carries no history to compact")
        try:
            counted = await anyio.to_thread.run_sync(self.estimation.count, wanted)
        except InvalidHistoryError as exc:
            return CompactionPreview(
                False, reason=f"history not compactable: {exc.where or 'body'}"
            )
        before = counted.estimate.tokens
        if not counted.should_compact:
            return CompactionPreview(False, before, before, reason="under threshold")
        history, inline = list(wanted.messages), counted.inline_system_count
        wanted = replace(wanted, keep_recent_tokens=kept_tail_tokens(counted.threshold))
        conversation = self._conversation(call, wanted, counted, history)
        hit = await anyio.to_thread.run_sync(conversation.longest)
        if hit is not None:
            working = with_summary(history, inline, hit)
            wanted = replace(wanted, messages=working)
            counted = await anyio.to_thread.run_sync(self.estimation.count, wanted)
            if not counted.should_compact:
                cut = inline + hit.prefix_len
                tokens = counted.estimate.tokens
                return CompactionPreview(True, before, tokens, hit.prefix_len, cut, cache_hit=True)
        subject = {"api": call.api.name, "tenant": call.tenant, "dry_run": True}
        options = CompactOptions(trigger="auto", subject=subject)
        try:
            outcome = await self.compaction.compact(
                wanted, options, call.caller_gone, counted=counted
            )
        except (SummarizerError, IneffectiveCompactionError) as exc:
            reason = f"compaction would fail (forwarded uncompacted): {type(exc).__name__}"
            return CompactionPreview(False, before, before, reason=reason)
        if not outcome.compacted:
            return CompactionPreview(False, before, before, reason=outcome.reason)
        if outcome.plan is None or outcome.summary is None:
            # Tool results cleared in place: nothing folded.
            return CompactionPreview(True, before, outcome.tokens_after)
        folded = SummaryBase(inline, hit).covered(outcome.plan)
        return CompactionPreview(
            True, before, outcome.tokens_after, folded, inline + folded, cache_hit=hit is not None
        )

    def _log_cached(
        self,
        call: ProxyCall,
        before: CountedHistory,
        tokens_after: int,
        hit: CachedSummary,
        started: float,
        trigger: str,
        prepared: str | None = None,
    ) -> None:
        """The line of a compaction the summary cache answered (no summarizer call)."""
        info = self.compaction.summarizer.info
        log_compaction(
            before,
            tokens_after=tokens_after,
            trigger=trigger,
            strategy="summarize",
            applied=("summarize",),
            summarizer=f"{info.provider}/{info.model}",
            duration_ms=(time.perf_counter() - started) * 1000,
            subject={"api": call.api.name, "tenant": call.tenant},
            summarized_messages=hit.prefix_len,
            cached=True,
            prepared_ahead=prepared is not None,
            prepared=prepared,
        )

    def _conversation(
        self, call: ProxyCall, wanted: HistoryInput, counted: CountedHistory, history: list[Any]
    ) -> CachedConversation:
        """Where `history` (counted as `counted`) stands in the summary cache: its scope
        (everything besides the prefix that shapes its summary), and the hashes of its
        prefixes after the inline system messages."""
        inline = counted.inline_system_count
        info = self.compaction.summarizer.info
        scope = scope_key(
            call.api.format,
            wanted.system,
            history[:inline],
            list(wanted.tools),
            info.provider,
            info.model,
            self.compaction.default_thinking.value,
        )
        prefixes = PrefixHashes(
            history[inline:], counted.message_digests[inline:], self._prefix_memo
        )
        return CachedConversation(self.cache, call.tenant, scope, prefixes)

    async def known_under_threshold(self, call: ProxyCall) -> int | None:
        """The token count of a body already seen, byte for byte, under its threshold."""
        return await self.memos.under_threshold(call.api.name, call.raw)

    async def known_compacted(
        self, call: ProxyCall, body: dict[str, Any], report: ProxyReport
    ) -> dict[str, Any] | None:
        """The body forwarded last time for this very body (same tenant, same bytes, on
        any replica sharing the memo), with the report filled in as then; None when it
        was not compacted before.

        Its summary came from the summary cache (or was just stored there) and the rest of
        the history is in the bytes, so a resend would rebuild exactly this body."""
        known = await self.memos.compacted(call.tenant, call.api.name, call.raw)
        if known is None:
            return None
        received = history_of(call, body)
        working = rebuilt_history(known, received.messages) if received is not None else None
        if working is None:
            return None
        report.compacted = report.cache_hit = True
        report.tokens_before, report.tokens_after = known.tokens_before, known.tokens_after
        self.observer.summary_cache_lookup(call.api.name, True)
        # The caller's breakpoints placed as the first forward placed them (SPEC §15):
        # the summary stands right after the unchanged lead.
        forwarded = call.api.with_history(body, working)
        return call.api.with_cache_breakpoints(body, forwarded, known.lead)

    async def _remember_compacted(
        self, call: ProxyCall, received: list[Any], forwarded: list[Any], report: ProxyReport
    ) -> None:
        if report.tokens_before is None or report.tokens_after is None:
            return
        resend = compacted_resend(received, forwarded, (report.tokens_before, report.tokens_after))
        if resend is not None:
            await self.memos.remember_compacted(call.tenant, call.api.name, call.raw, resend)

    async def _lookup(
        self, call: ProxyCall, conversation: CachedConversation
    ) -> CachedSummary | None:
        hit = await anyio.to_thread.run_sync(conversation.longest)
        self.observer.summary_cache_lookup(call.api.name, hit is not None)
        return hit

    # --- Prepared ahead (SPEC §16; the policy and the background work: prepare_ahead) ---

    def _ahead_due(self, pace_key: tuple[Any, ...] | None, counted: CountedHistory) -> bool:
        """True when the summary the threshold will need should start now: `counted` (what
        goes upstream) is past the soft threshold and the threshold is near enough for
        the conversation's pace (services.ahead_pace)."""
        if self.ahead is None or not self.ahead.past_soft_threshold(counted):
            return False
        if pace_key is None:
            return True
        return self.ahead.pace.in_time(pace_key, counted.threshold - counted.estimate.tokens)

    async def _prepare_under_threshold(
        self, call: ProxyCall, wanted: HistoryInput, counted: CountedHistory
    ) -> None:
        """Past the soft threshold, under the threshold: the summary the compaction at
        the threshold will need is started in the background."""
        history = list(wanted.messages)
        wanted = replace(wanted, keep_recent_tokens=kept_tail_tokens(counted.threshold))
        conversation = self._conversation(call, wanted, counted, history)
        await self._prepare_ahead(call, wanted, conversation, history, counted, None)

    async def _prepare_ahead(
        self,
        call: ProxyCall,
        wanted: HistoryInput,
        conversation: CachedConversation,
        history: list[Any],
        full: CountedHistory,
        hit: CachedSummary | None,
        *,
        needed: bool = False,
    ) -> Taken | None:
        """Starts the background summary of `wanted` (the caller's history, or it with
        the cached summary `hit` in place of its prefix) unless one runs for it, here or
        on another replica (`PrepareAhead.start`)."""
        assert self.ahead is not None
        inline = full.inline_system_count
        job = AheadJob(
            tenant=call.tenant,
            api=call.api.name,
            scope=conversation.scope,
            conversation=history[inline:],
            digests=list(full.message_digests[inline:]),
            history=replace(wanted, messages=list(wanted.messages)),
            inline=inline,
            hit=hit,
            pace_key=self.ahead.pace_key(call.tenant, call.api.name, full),
        )
        return await self.ahead.start(self._ahead_key(conversation), job, needed=needed)

    def _ahead_key(self, conversation: CachedConversation) -> tuple[str, ...]:
        assert self.ahead is not None
        return self.ahead.conversation_key(
            conversation.tenant, conversation.scope, conversation.prefixes
        )

    def _older_in_use(
        self,
        call: ProxyCall,
        caller: tuple[CachedConversation, list[Any], int],
        hit: CachedSummary,
        wanted: HistoryInput,
    ) -> tuple[CachedSummary, list[Any], CountedHistory] | None:
        """When `hit` is a summary prepared ahead that no turn needed yet: the summary in
        use before it, the caller's history (`caller`: its conversation, history, inline
        system messages) with it, and its count, if that is still under the threshold —
        the prepared one waits for the turn that crosses it (`PrepareAhead.held_back`
        says why)."""
        conversation, history, inline = caller
        if self.ahead is None:
            return None
        older = self.ahead.held_back(self._ahead_key(conversation), conversation.prefixes, hit)
        if older is None:
            return None
        working = with_summary(history, inline, older)
        counted = self.estimation.count(replace(wanted, messages=working))
        return None if counted.should_compact else (older, working, counted)

    def _prepared_used(
        self, api: str, conversation: CachedConversation, hit: CachedSummary
    ) -> str | None:
        """`ready` when `hit` is a prepared summary used for the first time."""
        if self.ahead is None:
            return None
        prefix_hash = conversation.prefixes.at(hit.prefix_len)
        if not self.ahead.used(self._ahead_key(conversation), prefix_hash):
            return None
        # Applied now, summarized before: counted as the compaction it stands for.
        self.observer.proxy_compacted(api, "auto")
        return Prepared.READY.value

    async def _not_ready(
        self,
        call: ProxyCall,
        body: dict[str, Any],
        now: tuple[HistoryInput, CountedHistory],
        caller: tuple[CachedConversation, list[Any], CountedHistory],
        hit: CachedSummary | None,
        report: ProxyReport,
    ) -> _Deferred | None:
        """Over the threshold with no summary ready: forward as it is while it fits the
        window (`pending`), else wait for the background summary (`waited`); None:
        compact inline (none was on its way and the request does not fit, or the
        background one failed, was given up, or took too long)."""
        assert self.ahead is not None
        wanted, counted = now
        conversation, history, full = caller
        key = self._ahead_key(conversation)
        envelope = call.envelope if body is call.body else call.api.envelope(body, call.path_params)
        budget = envelope.output_budget if envelope is not None else 0
        fits = self.ahead.fits_window(counted, budget)
        if not fits and not await self.ahead.under_way(key):
            # The turn must wait and nothing was started before it: waiting for a summary
            # started now is the inline compaction with more steps (a lease, a task, the
            # cache written and read back), so it is the inline one.
            return None
        where = await self._prepare_ahead(
            call, wanted, conversation, history, full, hit, needed=True
        )
        if where is None:
            return None
        if fits:
            report.prepared = Prepared.PENDING.value
            log_event(
                log,
                "compaction_deferred",
                api=call.api.name,
                tenant=call.tenant,
                tokens=counted.estimate.tokens,
                threshold=counted.threshold,
                prepared=report.prepared,
                background="here" if where is Taken.TAKEN else where.value,
            )
            forwarded = call.api.with_history(body, list(wanted.messages)) if hit else None
            return _Deferred(forwarded)
        seconds = self.ahead.policy.wait_seconds
        if where is Taken.TAKEN:
            done = await self.ahead.background.wait(key, seconds)
        else:
            # Another replica's: its summary is in the shared cache once its lease is free.
            done = await self.ahead.leases.wait_elsewhere(key, seconds)
        if not done:
            return None
        # Done: the summary cache has it (used at once) or what it leaves is updated
        # inline, only the part after its prefix summarized.
        forwarded = await self.apply(call, body, report, defer=False)
        report.prepared = Prepared.WAITED.value
        return _Deferred(forwarded)


@dataclass(frozen=True, slots=True)
class _Deferred:
    """The body to forward instead of compacting inline (None: the body as it came)."""

    body: dict[str, Any] | None


class TransparentStage:
    """The pipeline's transparent compaction (SPEC §10), for requests not bound to a
    session; it also answers an overflow of any request it could have compacted."""

    def __init__(self, compactor: TransparentCompactor) -> None:
        self.compactor = compactor

    async def run(self, exchange: Exchange) -> None:
        call = exchange.call
        if call.bound:
            return
        if call.dry_run:
            # Forwarded as it came; what would have been done is only reported.
            preview = await self._preview(exchange)
            exchange.report.preview = preview
            exchange.report.tokens_before = exchange.report.tokens_after = preview.tokens_before
            return
        if exchange.mode is ProxyMode.OFF:
            return
        body = exchange.working_body
        if body is None:
            return
        report = exchange.report

        async def recover() -> dict[str, Any] | None:
            return await self.compactor.apply(call, body, report, trigger="overflow")

        exchange.recover_overflow = recover
        if exchange.mode is not ProxyMode.TRANSPARENT:
            return
        # A history resent unchanged and known to be under its threshold goes on as it
        # came, unparsed and uncounted; one compacted before goes on as it went then.
        known = await self.compactor.known_under_threshold(call)
        if known is not None:
            report.tokens_before = report.tokens_after = known
            return
        resent = await self.compactor.known_compacted(call, body, report)
        if resent is not None:
            exchange.body = resent
            return
        forwarded = await self.compactor.apply(call, body, report, counted_by=exchange)
        if forwarded is not None:
            exchange.body = forwarded

    async def _preview(self, exchange: Exchange) -> CompactionPreview:
        body = exchange.working_body
        if exchange.mode is not ProxyMode.TRANSPARENT:
            reason = f"{exchange.mode.value} mode: the service does not compact this request"
            return CompactionPreview(False, reason=reason)
        if body is None:
            return CompactionPreview(False, reason="the body is not a JSON object")
        return await self.compactor.preview(exchange.call, body)
