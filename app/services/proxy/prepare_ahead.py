"""Summaries prepared ahead (SPEC §16) for the proxy's stateless callers: past a soft
threshold (`prepare_ahead_ratio` of the threshold), once the threshold is a summary's
time plus one turn away (`services.ahead_pace`; at once before the conversation's first
prepared summary), the summary the next compaction needs is made in the background and
stored in the summary cache, keyed by the prefix it summarizes; the turn that crosses
the threshold finds it there and waits for nothing.

Not ready yet when the threshold is crossed: a history that still fits the model's
window goes on uncompacted (`pending`); one that does not waits for the background
summary, bounded (`waited`), then falls back to compacting inline.

One background summary per conversation at a time, across replicas: in this process
by key, across processes by the conversation's lease in the shared store
(`ahead_leases`); a replica that finds the lease held starts none and finds the
holder's summary in the shared summary cache. A failed one is retried at most once (per
replica); the lifespan cancels the ones still running at shutdown, and a cancelled one
stores nothing and gives its lease up.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import anyio

from app.engine.errors import IneffectiveCompactionError
from app.json_logging import log_event
from app.services.ahead_pace import AheadPace
from app.services.background import CancelledOnExit
from app.services.compaction import CompactionService
from app.services.compaction_log import log_prepared_summary
from app.services.cost_ledger import CostLedger
from app.services.estimation import CountedHistory, EstimationService
from app.services.history import CompactOptions, HistoryInput
from app.services.prepared_observer import NullPrepareObserver, PrepareObserver
from app.services.proxy.ahead_leases import AheadLeases, Taken
from app.services.proxy.cached_conversation import (
    CachedConversation,
    IneffectiveMemory,
    SummaryBase,
)
from app.services.proxy.summary_cache import (
    CachedSummary,
    PrefixHashes,
    PrefixMemo,
    SummaryCache,
)
from app.services.sessions.prepare_ahead import kept_ahead

__all__ = [
    "AheadJob",
    "BackgroundSummaries",
    "NullPrepareObserver",
    "PrepareAhead",
    "PrepareAheadPolicy",
    "PrepareObserver",
    "Prepared",
]

log = logging.getLogger("compactor.proxy")

# Conversations whose prepared summary (or failures) are remembered, per process.
_REMEMBERED = 4096
# A background summary that failed is started again this many times at most.
_RETRIES = 1


class Prepared(StrEnum):
    """What the turn that crossed the threshold found (X-Compactor-Prepared)."""

    READY = "ready"
    PENDING = "pending"
    WAITED = "waited"


@dataclass(frozen=True, slots=True)
class PrepareAheadPolicy:
    """The service-wide soft threshold (None: off) and the bounded wait."""

    ratio: float | None = 0.8
    wait_seconds: float = 60.0

    def soft_threshold(self, counted: CountedHistory) -> int | None:
        """The token count past which a summary is prepared; None when off. A model's
        policy (COMPACTOR_CONFIG) sets its own ratio; `off` service-wide wins."""
        if self.ratio is None:
            return None
        ratio = counted.choice.model.policy.prepare_ahead_ratio or self.ratio
        return math.floor(ratio * counted.threshold)


class _Lru(OrderedDict[Any, Any]):
    def remember(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > _REMEMBERED:
            self.popitem(last=False)


class BackgroundSummaries(CancelledOnExit):
    """Background work by key: one at a time per key, retried at most once after a
    failure, all of it cancelled when the block ends (the app's lifespan)."""

    def __init__(self) -> None:
        super().__init__()
        self._running: dict[Any, anyio.Event] = {}
        self._failures: _Lru = _Lru()

    def running(self, key: Any) -> bool:
        """True while the work of `key` runs."""
        return key in self._running

    def can_start(self, key: Any) -> bool:
        """True when `start` would start the work of `key` now."""
        if self._group is None or key in self._running:
            return False
        failures: int = self._failures.get(key, 0)
        return failures <= _RETRIES

    def start(self, key: Any, work: Callable[[], Awaitable[bool]]) -> bool:
        """Starts `work` unless one of `key` runs, it failed too often, or the block is
        closed; `work` answers whether it succeeded (an exception is a failure)."""
        if not self.can_start(key):
            return False
        assert self._group is not None
        done = anyio.Event()
        self._running[key] = done
        self._group.start_soon(self._run, key, work, done)
        return True

    async def wait(self, key: Any, seconds: float) -> bool:
        """Waits (at most `seconds`) for the work of `key`; True when none runs now."""
        done = self._running.get(key)
        if done is None:
            return True
        with anyio.move_on_after(seconds):
            await done.wait()
        return done.is_set()

    async def _run(self, key: Any, work: Callable[[], Awaitable[bool]], done: anyio.Event) -> None:
        ok = False
        try:
            ok = await work()
        except Exception as exc:
            # Never a turn's failure: the turn compacts inline if it must.
            log.warning("background summary failed", extra={"error": type(exc).__name__})
        finally:
            self._running.pop(key, None)
            done.set()
        if ok:
            self._failures.pop(key, None)
        else:
            self._failures.remember(key, self._failures.get(key, 0) + 1)


@dataclass(frozen=True, slots=True)
class AheadJob:
    """What one background summary needs, taken from the turn that started it."""

    tenant: str
    api: str
    scope: str
    # The caller's history after its inline system messages (what prefixes key).
    conversation: list[Any]
    digests: list[tuple[int, int]]
    # The history to compact: the caller's, or with a cached summary in place of its prefix.
    history: HistoryInput
    inline: int
    hit: CachedSummary | None
    # The conversation as its pace knows it (`PrepareAhead.pace_key`; None: unnamed).
    pace_key: tuple[Any, ...] | None = None


@dataclass(eq=False)
class PrepareAhead:
    """Starts, finds and accounts for the summaries prepared ahead of a threshold."""

    policy: PrepareAheadPolicy
    background: BackgroundSummaries
    estimation: EstimationService
    compaction: CompactionService
    cache: SummaryCache
    memo: PrefixMemo
    observer: PrepareObserver = field(default_factory=NullPrepareObserver)
    # Bills the background summaries to the tenant, as the inline path does (SPEC §15).
    ledger: CostLedger | None = None
    # One background summary per conversation across replicas (none: this process's).
    leases: AheadLeases = field(default_factory=lambda: AheadLeases(None))
    # When, past the soft threshold, a summary is started (services.ahead_pace): by
    # conversation, keyed by `pace_key`.
    pace: AheadPace = field(default_factory=AheadPace)
    # Per conversation: the prefix hash of its newest prepared summary, and whether a
    # turn used it yet (one never used when the next is prepared is wasted).
    _prepared: _Lru = field(default_factory=_Lru, init=False)
    # Conversations whose lease another replica held when this one asked: a summary
    # the crossing turn finds in the shared cache was prepared ahead there.
    _elsewhere: _Lru = field(default_factory=_Lru, init=False)
    # Per conversation: the summary its latest compacted turn was forwarded with (its
    # prefix hash, and it), which stays in use until a turn needs the prepared one.
    _in_use: _Lru = field(default_factory=_Lru, init=False)

    @staticmethod
    def conversation_key(tenant: str, scope: str, prefixes: PrefixHashes) -> tuple[str, ...]:
        """A conversation of a stateless caller: its scope and its first message."""
        return tenant, scope, prefixes.at(min(1, len(prefixes)))

    @staticmethod
    def pace_key(tenant: str, api: str, full: CountedHistory) -> tuple[Any, ...] | None:
        """A stateless caller's conversation as cheaply as every turn can name it: its
        API, model and first message after the inline system ones (None: it has none)."""
        digests, inline = full.message_digests, full.inline_system_count
        if len(digests) <= inline:
            return None
        return tenant, api, full.choice.model.name, digests[inline]

    def past_soft_threshold(self, counted: CountedHistory) -> bool:
        """True when `counted` is past the soft threshold (never under it)."""
        soft = self.policy.soft_threshold(counted)
        return soft is not None and counted.estimate.tokens > soft

    def fits_window(self, counted: CountedHistory, output_budget: int) -> bool:
        """True when the uncompacted request still fits the model's window."""
        window = counted.settings.effective_window
        return counted.estimate.tokens <= window - output_budget

    async def start(
        self, key: tuple[str, ...], job: AheadJob, *, needed: bool = False
    ) -> Taken | None:
        """Starts the background summary of `job` unless one of `key` runs or, before
        it is `needed` (over the threshold), one prepared for `key` is still unused.
        `TAKEN`: one runs here now; `ELSEWHERE`: another replica holds the lease, its
        summary is on its way; None: none runs (given up, or the store did not answer)."""
        prepared = self._prepared.get(key)
        if not needed and prepared is not None and not prepared[1]:
            return None
        if self.background.running(key):
            return Taken.TAKEN
        if not self.background.can_start(key):
            return None
        # Taken before the work starts, so the turn knows whether another replica works.
        taken = await self.leases.take(key)
        if taken is not Taken.TAKEN:
            self.observer.prepared_summary(taken.value)
            if taken is Taken.ELSEWHERE:
                self._elsewhere.remember(key, True)
                log_event(log, "prepare_ahead_skipped", tenant=job.tenant, outcome=taken.value)
                return taken
            return None

        async def summarize() -> bool:
            try:
                return await self._summarize(key, job)
            except Exception:
                self.observer.prepared_summary("failed")
                raise

        async def work() -> bool:
            return await self.leases.holding(key, summarize)

        if self.background.start(key, work):
            self.observer.prepared_summary("started")
            return Taken.TAKEN
        if self.background.running(key):
            # A concurrent turn here started it meanwhile, under the same (own) lease.
            return Taken.TAKEN
        # Shutting down: the lease is not kept for work that never runs.
        with anyio.CancelScope(shield=True):
            await self.leases.release(key)
        return None

    async def under_way(self, key: tuple[str, ...]) -> bool:
        """True when the background summary of `key` runs, here or on another replica
        (which holds its lease)."""
        if self.background.running(key):
            return True
        taken = await self.leases.take(key)
        if taken is Taken.TAKEN:
            # Only asked to know.
            with anyio.CancelScope(shield=True):
                await self.leases.release(key)
        return taken is Taken.ELSEWHERE

    def used(self, key: tuple[str, ...], prefix_hash: str) -> bool:
        """Marks the prepared summary of `prefix_hash` used; True when it was one, not
        used before."""
        found = self._prepared.get(key)
        if found is not None and found[0] == prefix_hash and not found[1]:
            self._prepared.remember(key, (prefix_hash, True))
            return True
        if self._elsewhere.pop(key, None) is not None:
            # Prepared by the replica that held the lease, found in the shared cache.
            self._prepared.remember(key, (prefix_hash, True))
            return True
        return False

    def in_use(self, key: tuple[str, ...], prefix_hash: str, summary: CachedSummary) -> None:
        """`summary` (of the prefix `prefix_hash`) is the one the conversation's turn was
        forwarded with."""
        self._in_use.remember(key, (prefix_hash, summary))

    def held_back(
        self, key: tuple[str, ...], prefixes: PrefixHashes, hit: CachedSummary
    ) -> CachedSummary | None:
        """The summary in use before `hit`, when `hit` is the conversation's prepared
        summary no turn used yet and the older one still applies (its prefix is this
        history's): the prepared one waits for the turn that needs it. Used at once it
        would compact at the soft threshold, each time before the threshold, and its kept
        tail — shortened by the growth expected until the threshold — would be short:
        more summaries than inline compaction, for less kept verbatim."""
        prepared = self._prepared.get(key)
        if prepared is None or prepared[1] or prepared[0] != prefixes.at(hit.prefix_len):
            return None
        found = self._in_use.get(key)
        if found is None:
            return None
        prefix_hash, older = found
        if older.prefix_len >= hit.prefix_len or prefixes.at(older.prefix_len) != prefix_hash:
            return None
        return older  # type: ignore[no-any-return]

    async def _summarize(self, key: tuple[str, ...], job: AheadJob) -> bool:
        started = time.perf_counter()
        prefixes = PrefixHashes(job.conversation, job.digests, self.memo)
        conversation = CachedConversation(self.cache, job.tenant, job.scope, prefixes)
        # Under the lease now: a summary stored since the turn looked (by the replica that
        # held the lease before) is not made again.
        newer = await anyio.to_thread.run_sync(conversation.longest)
        if newer is not None and newer.prefix_len > (job.hit.prefix_len if job.hit else 0):
            found = prefixes.at(newer.prefix_len)
            if self._prepared.get(key, (None,))[0] != found:
                self._prepared.remember(key, (found, False))
            self._elsewhere.pop(key, None)
            self.observer.prepared_summary("prepared_elsewhere")
            return True
        history = job.history
        # Parsed: the cut ahead reads the turns (and the compaction needs them anyway).
        counted = await anyio.to_thread.run_sync(self.estimation.parsed, history, None)
        keep = history.keep_recent_tokens
        if keep is not None and (ahead := kept_ahead(keep, counted)) != keep:
            history = replace(history, keep_recent_tokens=ahead)
            counted = self.estimation.resettled(history, counted)
        base = SummaryBase(job.inline, job.hit)
        # A prefix whose summary did not shrink the history before is not paid for again
        # (the proxy's ineffective-summary memory, shared with the inline path).
        known = await anyio.to_thread.run_sync(conversation.known_ineffective)
        ineffective = IneffectiveMemory(base, known)
        options = CompactOptions(
            force=True,
            trigger="prepare_ahead",
            skip_summary=ineffective.skip,
            subject={"api": job.api, "tenant": job.tenant},
        )
        try:
            outcome = await self.compaction.compact(history, options, counted=counted)
        except IneffectiveCompactionError:
            if ineffective.planned is not None:
                await anyio.to_thread.run_sync(
                    conversation.store_ineffective, base.covered(ineffective.planned)
                )
            self.observer.prepared_summary("ineffective")
            return True
        if self.ledger is not None and outcome.summary is not None and outcome.summarizer:
            # Billed whether or not a turn ever uses it: the call happened upstream.
            await self.ledger.summary_call(
                job.tenant, outcome.summarizer.info, outcome.summary.usage
            )
        if not outcome.compacted or outcome.plan is None or outcome.messages is None:
            self.observer.prepared_summary("nothing_to_compact")
            return True
        summary = base.entry(outcome.plan, counted, outcome.messages)
        prefix_hash = await anyio.to_thread.run_sync(prefixes.at, summary.prefix_len)
        previous = self._prepared.get(key)
        # Known as this conversation's prepared summary before a turn can find it in the
        # cache: a turn that finds it there holds it back until it is needed (`held_back`).
        self._prepared.remember(key, (prefix_hash, False))
        with anyio.CancelScope(shield=True):
            # Stored whole or not at all: a shutdown does not cut the write in half.
            stored = await anyio.to_thread.run_sync(conversation.store, summary)
        if not stored:
            if previous is not None:
                self._prepared.remember(key, previous)
            else:
                self._prepared.pop(key, None)
            self.observer.prepared_summary("failed")
            return False
        if previous is not None and not previous[1] and previous[0] != prefix_hash:
            self.observer.prepared_wasted()
        self._elsewhere.pop(key, None)
        self.observer.prepared_summary("stored")
        seconds = time.perf_counter() - started
        if job.pace_key is not None:
            self.pace.summary_took(job.pace_key, seconds)
        info = self.compaction.summarizer.info
        log_prepared_summary(
            counted,
            subject={"api": job.api, "tenant": job.tenant},
            tokens_after=outcome.tokens_after,
            summarizer=f"{info.provider}/{info.model}",
            duration_ms=seconds * 1000,
            summarized_messages=summary.prefix_len,
        )
        return True
