"""The proxy's summary cache in the store, on SQLite and PostgreSQL: longest matching
prefix wins, tenants never see each other's entries, and each tenant's entries are
bounded with the oldest evicted first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.services.estimation import message_digests
from app.services.proxy.summary_cache import (
    CachedSummary,
    PrefixHashes,
    PrefixMemo,
    SummaryCache,
    ignoring_store_errors,
    scope_key,
)
from app.store.database import create_db_engine, session_factory
from app.store.summaries import SqlSummaryStore

HISTORY: list[Any] = [{"role": "user", "content": f"message {i}"} for i in range(10)]


@pytest.fixture
def cache_factory(database_url: str) -> Iterator[Any]:
    engine = create_db_engine(database_url)
    yield lambda bound: SummaryCache(SqlSummaryStore(session_factory(engine), bound))
    engine.dispose()


def summary(length: int) -> CachedSummary:
    return CachedSummary(length, 10 * length, {"role": "user", "content": f"summary of {length}"})


def test_the_longest_stored_prefix_of_the_history_is_found(cache_factory: Any) -> None:
    cache = cache_factory(100)
    scope = scope_key("openai", None, [], [])
    cache.store("t1", scope, PrefixHashes(HISTORY), summary(3))
    cache.store("t1", scope, PrefixHashes(HISTORY), summary(6))
    cache.store("t1", scope, PrefixHashes(HISTORY), summary(6))  # a concurrent twin: ignored
    assert cache.longest("t1", scope, PrefixHashes(HISTORY)) == summary(6)
    # A history that diverges after message 4 only matches the shorter prefix.
    forked = [*HISTORY[:4], {"role": "user", "content": "something else"}, *HISTORY[5:]]
    assert cache.longest("t1", scope, PrefixHashes(forked)) == summary(3)
    # Key order inside a message does not matter; content does.
    reordered = [{"content": m["content"], "role": m["role"]} for m in HISTORY]
    assert cache.longest("t1", scope, PrefixHashes(reordered)) == summary(6)
    # Another tenant, or another system prompt, sees nothing.
    assert cache.longest("t2", scope, PrefixHashes(HISTORY)) is None
    other_scope = scope_key("openai", "a different system prompt", [], [])
    assert cache.longest("t1", other_scope, PrefixHashes(HISTORY)) is None
    # A prefix as long as the whole history would leave nothing to keep: not a match.
    assert cache.longest("t1", scope, PrefixHashes(HISTORY[:6])) == summary(3)


def test_entries_are_bounded_per_tenant_oldest_first(cache_factory: Any) -> None:
    cache = cache_factory(3)
    scope = scope_key("anthropic", "sys", [], [])
    for length in range(1, 6):
        cache.store("t1", scope, PrefixHashes(HISTORY), summary(length))
    cache.store("t2", scope, PrefixHashes(HISTORY), summary(1))
    # t1 keeps its 3 newest entries (lengths 3, 4, 5); t2's entry does not count against it.
    assert cache.longest("t1", scope, PrefixHashes(HISTORY[:4])) == summary(3)
    assert cache.longest("t1", scope, PrefixHashes(HISTORY[:3])) is None
    assert cache.longest("t2", scope, PrefixHashes(HISTORY)) == summary(1)


def memoized(history: list[Any], memo: PrefixMemo) -> PrefixHashes:
    return PrefixHashes(history, message_digests(history), memo)


def test_memoized_prefix_hashes_are_the_hashes_themselves(cache_factory: Any) -> None:
    memo = PrefixMemo()
    forked = [*HISTORY[:4], {"role": "user", "content": "something else"}, *HISTORY[5:]]
    for _ in range(2):  # the second round answers from the memo
        for history in (HISTORY, forked, HISTORY[:6]):
            fresh, remembered = PrefixHashes(history), memoized(history, memo)
            assert [remembered.at(k) for k in range(len(history) + 1)] == [
                fresh.at(k) for k in range(len(history) + 1)
            ]
    # Asked out of order, from the memo or not, the answer is the same.
    assert memoized(HISTORY, memo).at(3) == memoized(HISTORY, PrefixMemo()).at(3)
    assert memoized(forked, memo).memoized(6) == PrefixHashes(forked).at(6)
    assert memoized(forked, PrefixMemo()).memoized(6) is None
    # The same lookups as above, through the memo, twice.
    cache = cache_factory(100)
    scope = scope_key("openai", None, [], [])
    cache.store("t1", scope, memoized(HISTORY, memo), summary(3))
    cache.store("t1", scope, memoized(HISTORY, memo), summary(6))
    for _ in range(2):
        assert cache.longest("t1", scope, memoized(HISTORY, memo)) == summary(6)
        assert cache.longest("t1", scope, memoized(forked, memo)) == summary(3)
        assert cache.longest("t1", scope, memoized(HISTORY[:6], memo)) == summary(3)
        assert cache.longest("t2", scope, memoized(HISTORY, memo)) is None


def test_a_summary_read_before_is_a_fresh_copy_and_goes_with_its_row(
    cache_factory: Any,
) -> None:
    cache = cache_factory(1)
    scope = scope_key("openai", None, [], [])
    memo = PrefixMemo()
    cache.store("t1", scope, PrefixHashes(HISTORY), summary(3))
    first = cache.longest("t1", scope, memoized(HISTORY, memo))
    assert first == summary(3)
    first.summary_message["content"] = "changed by the caller"
    assert cache.longest("t1", scope, memoized(HISTORY, memo)) == summary(3)
    # A newer entry evicts the row (bound 1): the lookup no longer finds what it read.
    cache.store("t1", scope, PrefixHashes(HISTORY), summary(5))
    assert cache.longest("t1", scope, memoized(HISTORY[:5], memo)) is None
    assert cache.longest("t1", scope, memoized(HISTORY, memo)) == summary(5)


def test_a_store_that_cannot_answer_is_a_miss_never_a_failed_request(tmp_path: Any) -> None:
    # A database without the table: the adapter raises the store's own error, and the
    # tolerant wrapper the proxy uses turns it into a miss, naming the driver's error.
    engine = create_db_engine(f"sqlite:///{tmp_path / 'empty.db'}")
    cache = SummaryCache(SqlSummaryStore(session_factory(engine), 10))
    scope = scope_key("openai", None, [], [])
    failures: list[str] = []
    try:
        found = ignoring_store_errors(
            lambda: cache.longest("t1", scope, PrefixHashes(HISTORY)), failures.append
        )
        stored = ignoring_store_errors(
            lambda: cache.store("t1", scope, PrefixHashes(HISTORY), summary(3)), failures.append
        )
    finally:
        engine.dispose()
    assert found is None and stored is None
    assert failures == ["OperationalError", "OperationalError"]
