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
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import anyio

from app.engine.compaction.orchestration import CompactionPlan
from app.engine.compaction.thresholds import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS
from app.engine.errors import IneffectiveCompactionError, InvalidHistoryError, SummarizerError
from app.formats.vendor.apis import ProxyApi
from app.services.compaction import CompactionService
from app.services.estimation import EstimationService
from app.services.history import CompactOptions, HistoryInput
from app.services.proxy.call import ProxyCall, ProxyObserver, ProxyReport
from app.services.proxy.summary_cache import (
    INEFFECTIVE_MARKER,
    CachedSummary,
    PrefixHashes,
    PrefixMemo,
    SummaryCache,
    ignoring_store_errors,
    ineffective_scope,
    scope_key,
)

log = logging.getLogger("compactor.proxy")
# The kept tail is at most this fraction of the threshold (1/4): small windows get a
# tail that fits, large ones the default keep_recent_tokens.
KEEP_RECENT_SHARE = 4
UNDER_THRESHOLD_ENTRIES = 4096
# Compacted bodies to forward for a body resent byte for byte (a retry, a client that
# resends its last request): each holds a compacted history, so only a few.
COMPACTED_RESEND_ENTRIES = 32


def _body_key(call: ProxyCall) -> tuple[str, int, int]:
    # Length plus SipHash, like the per-message count cache: keys never leave the process.
    return call.api.name, len(call.raw), hash(call.raw)


def _history_of(api: ProxyApi, body: dict[str, Any]) -> HistoryInput | None:
    """The request's history and what decides its threshold: the registry window of its
    model, the reserve raised by its output budget."""
    history = api.history(body)
    if history is None:
        return None
    tools = body.get("tools")
    model = body.get("model")
    return HistoryInput(
        messages=history,
        format=api.format,
        system=api.system(body),
        tools=tools if isinstance(tools, list) else [],
        model=model if isinstance(model, str) else None,
        reserve_tokens=max(DEFAULT_RESERVE_TOKENS, api.output_budget(body)),
    )


@dataclass(frozen=True, slots=True)
class _Compacted:
    body: dict[str, Any]
    tokens_before: int
    tokens_after: int


class _IneffectiveMemory:
    """Skips the summarizer for a prefix whose summary was refused as ineffective before
    (the same messages to summarize would be refused again), and remembers the plan."""

    def __init__(self, covered: Callable[[CompactionPlan], int]) -> None:
        self.covered = covered
        self.known: int | None = None
        self.planned: CompactionPlan | None = None

    def skip(self, plan: CompactionPlan) -> str | None:
        self.planned = plan
        if self.known is not None and self.covered(plan) == self.known:
            return (
                "a summary of these messages did not shrink the history before; waiting "
                "for more history before summarizing again"
            )
        return None


class TransparentCompactor:
    """Compacts proxied histories over their threshold, through the summary cache."""

    def __init__(
        self,
        estimation: EstimationService,
        compaction: CompactionService,
        cache: SummaryCache,
        observer: ProxyObserver,
    ) -> None:
        self.estimation = estimation
        self.compaction = compaction
        self.cache = cache
        self.observer = observer
        # Bodies known to be under their threshold (the decision depends only on the
        # bytes: model, output budget and history are all in them).
        self._under_threshold: OrderedDict[tuple[str, int, int], int] = OrderedDict()
        # How many of those bodies have each (api, length): a body of a length never seen
        # (a history that grew) is told apart without hashing its bytes.
        self._under_threshold_lengths: Counter[tuple[str, int]] = Counter()
        self._prefix_memo = PrefixMemo()
        # Tenant + body → what was forwarded for it and its counts, for exact resends.
        self._compacted: OrderedDict[tuple[str, str, int, int], _Compacted] = OrderedDict()

    async def apply(
        self,
        call: ProxyCall,
        body: dict[str, Any],
        report: ProxyReport,
        *,
        trigger: str = "auto",
    ) -> dict[str, Any] | None:
        """The body to forward (None: forward the original bytes). `trigger` overflow
        compacts whatever the estimate says."""
        api = call.api
        wanted = _history_of(api, body)
        if wanted is None:
            return None
        try:
            counted = self.estimation.count(wanted)
        except InvalidHistoryError as exc:
            # The upstream is the judge of what it accepts; the proxy only steps aside.
            report.note = f"history not compactable: {exc.where or 'body'}"
            return None
        report.tokens_before = report.tokens_after = counted.estimate.tokens
        overflow = trigger == "overflow"
        if not overflow and not counted.should_compact:
            self._remember_under_threshold(call, counted.estimate.tokens)
            return None
        history = list(wanted.messages)
        inline = counted.inline_system_count
        # The kept tail must leave room under the threshold, or the next turn compacts again.
        # After an overflow the upstream's window is smaller than the registry's: keep a
        # share of what was sent instead.
        basis = counted.estimate.tokens if overflow else counted.threshold
        keep = min(DEFAULT_KEEP_RECENT_TOKENS, max(1, basis // KEEP_RECENT_SHARE))
        wanted = replace(wanted, keep_recent_tokens=keep)
        scope = self._scope(api.format, wanted, history[:inline])
        prefixes = PrefixHashes(
            history[inline:], counted.message_digests[inline:], self._prefix_memo
        )
        hit = await self._lookup(call, scope, prefixes)
        forwarded = None
        if hit is not None:
            working = [*history[:inline], hit.summary_message, *history[inline + hit.prefix_len :]]
            wanted = replace(wanted, messages=working)
            counted = self.estimation.count(wanted)
            forwarded = api.with_history(body, working)
            report.compacted = report.cache_hit = True
            report.tokens_after = counted.estimate.tokens
            if not overflow and not counted.should_compact:
                self._remember_compacted(call, forwarded, report)
                return forwarded
        # What a plan's summary covers, in messages of the caller's history.
        offset = 1 if hit is not None else 0

        def covered(plan: CompactionPlan) -> int:
            return (hit.prefix_len if hit else 0) + plan.cut_index - inline - offset

        ineffective = _IneffectiveMemory(covered)
        if not overflow:
            ineffective.known = await anyio.to_thread.run_sync(
                self._known_ineffective, call.tenant, scope, prefixes
            )
        options = CompactOptions(force=overflow, trigger=trigger, skip_summary=ineffective.skip)
        try:
            outcome = await self.compaction.compact(wanted, options, call.caller_gone)
        except (SummarizerError, IneffectiveCompactionError) as exc:
            # Fail open: the upstream may still take the history; a summary is an aid.
            report.note = f"compaction failed: {type(exc).__name__}"
            log.warning("proxy compaction failed open", extra={"error": type(exc).__name__})
            planned = ineffective.planned
            if isinstance(exc, IneffectiveCompactionError) and planned is not None:
                marker = CachedSummary(covered(planned), 0, INEFFECTIVE_MARKER)
                await anyio.to_thread.run_sync(
                    self._store, call.tenant, ineffective_scope(scope), prefixes, marker
                )
            return None if overflow else forwarded
        if not outcome.compacted or outcome.plan is None or outcome.messages is None:
            report.note = outcome.reason
            # After an overflow, what was already sent would only overflow again.
            return None if overflow else forwarded
        cut = outcome.plan.cut_index
        summarized = CachedSummary(
            prefix_len=covered(outcome.plan),
            prefix_tokens=(hit.prefix_tokens if hit else 0)
            + sum(counted.per_message[inline + offset : cut]),
            summary_message=outcome.messages[inline],
        )
        await anyio.to_thread.run_sync(self._store, call.tenant, scope, prefixes, summarized)
        self.observer.proxy_compacted(api.name, trigger)
        report.compacted = True
        report.tokens_after = outcome.tokens_after
        forwarded = api.with_history(body, outcome.messages)
        if not overflow:
            self._remember_compacted(call, forwarded, report)
        return forwarded

    def _scope(self, format_name: str, wanted: HistoryInput, inline: list[Any]) -> str:
        """Everything besides the prefix that shapes its summary."""
        info = self.compaction.summarizer.info
        return scope_key(
            format_name,
            wanted.system,
            inline,
            list(wanted.tools),
            info.provider,
            info.model,
            self.compaction.default_thinking.value,
        )

    def known_under_threshold(self, call: ProxyCall) -> int | None:
        """The token count of a body already seen, byte for byte, under its threshold."""
        if (call.api.name, len(call.raw)) not in self._under_threshold_lengths:
            return None
        key = _body_key(call)
        tokens = self._under_threshold.get(key)
        if tokens is not None:
            self._under_threshold.move_to_end(key)
        return tokens

    def known_compacted(self, call: ProxyCall, report: ProxyReport) -> dict[str, Any] | None:
        """The body forwarded last time for this very body (same tenant, same bytes),
        with the report filled in as then; None when it was not compacted before.

        Its summary came from the summary cache (or was just stored there) and the rest of
        the history is in the bytes, so a resend would rebuild exactly this body."""
        key = (call.tenant, *_body_key(call))
        known = self._compacted.get(key)
        if known is None:
            return None
        self._compacted.move_to_end(key)
        report.compacted = report.cache_hit = True
        report.tokens_before, report.tokens_after = known.tokens_before, known.tokens_after
        self.observer.summary_cache_lookup(call.api.name, True)
        return dict(known.body)

    def _remember_compacted(
        self, call: ProxyCall, body: dict[str, Any], report: ProxyReport
    ) -> None:
        if report.tokens_before is None or report.tokens_after is None:
            return
        key = (call.tenant, *_body_key(call))
        self._compacted[key] = _Compacted(body, report.tokens_before, report.tokens_after)
        if len(self._compacted) > COMPACTED_RESEND_ENTRIES:
            self._compacted.popitem(last=False)

    def _remember_under_threshold(self, call: ProxyCall, tokens: int) -> None:
        key = _body_key(call)
        if key not in self._under_threshold:
            self._under_threshold_lengths[key[:2]] += 1
        self._under_threshold[key] = tokens
        if len(self._under_threshold) > UNDER_THRESHOLD_ENTRIES:
            evicted, _ = self._under_threshold.popitem(last=False)
            lengths = self._under_threshold_lengths
            lengths[evicted[:2]] -= 1
            if lengths[evicted[:2]] <= 0:
                del lengths[evicted[:2]]

    async def _lookup(
        self, call: ProxyCall, scope: str, prefixes: PrefixHashes
    ) -> CachedSummary | None:
        hit = await anyio.to_thread.run_sync(
            lambda: ignoring_store_errors(
                lambda: self.cache.longest(call.tenant, scope, prefixes), self._store_failed
            )
        )
        self.observer.summary_cache_lookup(call.api.name, hit is not None)
        return hit

    def _known_ineffective(self, tenant: str, scope: str, prefixes: PrefixHashes) -> int | None:
        """How many messages of this history were summarized before without shrinking it."""
        found = ignoring_store_errors(
            lambda: self.cache.longest(tenant, ineffective_scope(scope), prefixes),
            self._store_failed,
        )
        return found.prefix_len if found is not None else None

    def _store(
        self, tenant: str, scope: str, prefixes: PrefixHashes, summary: CachedSummary
    ) -> None:
        def store() -> None:
            self.cache.store(tenant, scope, prefixes, summary)

        ignoring_store_errors(store, self._store_failed)

    @staticmethod
    def _store_failed(kind: str) -> None:
        log.warning("summary cache unavailable", extra={"error": kind})
