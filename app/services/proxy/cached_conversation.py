"""A stateless caller's conversation in the proxy's summary cache (SPEC §10, §16): its
entries, and how a compaction of its history — with a cached summary in place of its
prefix — maps back to the caller's messages. Shared by the inline compaction
(`transparent`) and the one prepared ahead (`prepare_ahead`). Every read and write fails
open: a cache that cannot be reached is a miss, or a write not made."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.engine.compaction.orchestration import CompactionPlan
from app.services.estimation import CountedHistory
from app.services.proxy.summary_cache import (
    INEFFECTIVE_MARKER,
    CachedSummary,
    PrefixHashes,
    SummaryCache,
    ignoring_store_errors,
    ineffective_scope,
)

log = logging.getLogger("compactor.proxy")


def _store_failed(kind: str) -> None:
    log.warning("summary cache unavailable", extra={"error": kind})


def with_summary(history: Sequence[Any], inline: int, summary: CachedSummary) -> list[Any]:
    """`history` with `summary` in place of the prefix it covers (after the `inline`
    system messages)."""
    return [*history[:inline], summary.summary_message, *history[inline + summary.prefix_len :]]


@dataclass(frozen=True, slots=True)
class CachedConversation:
    """The entries of one conversation: its tenant, scope and prefix hashes."""

    cache: SummaryCache
    tenant: str
    scope: str
    prefixes: PrefixHashes

    def longest(self) -> CachedSummary | None:
        """The stored summary of the longest prefix (None: none, or no cache to ask)."""
        return ignoring_store_errors(
            lambda: self.cache.longest(self.tenant, self.scope, self.prefixes), _store_failed
        )

    def known_ineffective(self) -> int | None:
        """How many messages of this history were summarized before without shrinking it."""
        found = ignoring_store_errors(
            lambda: self.cache.longest(self.tenant, ineffective_scope(self.scope), self.prefixes),
            _store_failed,
        )
        return found.prefix_len if found is not None else None

    def store(self, summary: CachedSummary) -> bool:
        """Stores `summary`; False when the cache could not be reached."""

        def store() -> bool:
            self.cache.store(self.tenant, self.scope, self.prefixes, summary)
            return True

        return ignoring_store_errors(store, _store_failed) is not None

    def store_ineffective(self, prefix_len: int) -> None:
        """Remembers that a summary of the first `prefix_len` messages did not shrink the
        history, so the next request with the same prefix does not pay for it again."""
        marker = CachedSummary(prefix_len, 0, INEFFECTIVE_MARKER)

        def store() -> None:
            self.cache.store(self.tenant, ineffective_scope(self.scope), self.prefixes, marker)

        ignoring_store_errors(store, _store_failed)


@dataclass(frozen=True, slots=True)
class SummaryBase:
    """What a compaction of a cached conversation starts from: the caller's `inline`
    system messages, then the cached summary `hit` in place of its prefix (None: the
    caller's history as sent)."""

    inline: int
    hit: CachedSummary | None

    def covered(self, plan: CompactionPlan) -> int:
        """What `plan`'s summary covers, in messages of the caller's history."""
        offset = 1 if self.hit is not None else 0
        return (self.hit.prefix_len if self.hit else 0) + plan.cut_index - self.inline - offset

    def entry(
        self, plan: CompactionPlan, counted: CountedHistory, messages: Sequence[Any]
    ) -> CachedSummary:
        """The cache entry of the summary `plan` made (`messages`: the compacted history,
        `counted`: the count of the history compacted)."""
        offset = 1 if self.hit is not None else 0
        return CachedSummary(
            prefix_len=self.covered(plan),
            prefix_tokens=(self.hit.prefix_tokens if self.hit else 0)
            + sum(counted.per_message[self.inline + offset : plan.cut_index]),
            summary_message=messages[self.inline],
        )


class IneffectiveMemory:
    """Skips the summarizer for a prefix whose summary was refused as ineffective before
    (`known` messages: the same messages to summarize would be refused again), and
    remembers the latest plan."""

    def __init__(self, base: SummaryBase, known: int | None) -> None:
        self.base = base
        self.known = known
        self.planned: CompactionPlan | None = None

    def skip(self, plan: CompactionPlan) -> str | None:
        self.planned = plan
        if self.known is not None and self.base.covered(plan) == self.known:
            return (
                "a summary of these messages did not shrink the history before; waiting "
                "for more history before summarizing again"
            )
        return None
