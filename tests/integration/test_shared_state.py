"""The state replicas share, on its real backends: leases in SQLite, PostgreSQL and a
real redis-server; the resend memos in Redis; and a Redis that goes away, which is a
miss for the memos (never a failed request) until it answers again."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterator

import orjson
import pytest

from app.services.ports import LeaseStore
from app.services.proxy.resend_memo import ResendMemos, SharedResendMemos
from app.store.database import create_db_engine, session_factory
from app.store.leases import SqlLeases
from app.store.redis_connection import RedisConnection, RedisHealth
from app.store.redis_leases import RedisLeases
from app.store.redis_memos import RedisResendMemo
from app.store.views import CompactedResend
from tests.redis_server import RedisServer, throwaway_redis


def connection(url: str) -> RedisConnection:
    return RedisConnection(url, prefix=f"t{uuid.uuid4().hex[:8]}:", timeout_seconds=1.0)


@pytest.fixture
def sql_leases(database_url: str) -> Iterator[tuple[LeaseStore, LeaseStore]]:
    """The lease adapters of two replicas on one database (SQLite and PostgreSQL)."""
    engine = create_db_engine(database_url)
    sessions = session_factory(engine)
    yield SqlLeases(sessions), SqlLeases(sessions)
    engine.dispose()


@pytest.fixture
def redis_leases(redis_server: RedisServer) -> Iterator[tuple[LeaseStore, LeaseStore]]:
    """The lease adapters of two replicas on one Redis."""
    shared = connection(redis_server.url)
    yield RedisLeases(shared), RedisLeases(shared)
    asyncio.run(shared.aclose())


def one_replica_at_a_time(one: LeaseStore, two: LeaseStore) -> None:
    assert one.holder != two.holder
    assert one.acquire("prepare:s1", 30)
    assert not two.acquire("prepare:s1", 30)
    # Its holder takes it again (extends it); another key is free.
    assert one.acquire("prepare:s1", 30)
    assert two.acquire("prepare:s2", 30)
    # Released by someone else: nothing happens; by its holder: free for the other.
    two.release("prepare:s1")
    assert not two.acquire("prepare:s1", 30)
    one.release("prepare:s1")
    assert two.acquire("prepare:s1", 30)
    assert not one.acquire("prepare:s1", 30)
    # A holder that died: its lease is free once its time runs out.
    assert one.acquire("summary:p", 0.2)
    time.sleep(0.5)
    assert two.acquire("summary:p", 30)
    assert not one.acquire("summary:p", 30)


def test_one_replica_at_a_time_holds_a_lease_in_the_database(
    sql_leases: tuple[LeaseStore, LeaseStore],
) -> None:
    one_replica_at_a_time(*sql_leases)


def test_one_replica_at_a_time_holds_a_lease_in_redis(
    redis_leases: tuple[LeaseStore, LeaseStore],
) -> None:
    one_replica_at_a_time(*redis_leases)


def test_resend_memos_in_redis_are_shared_per_tenant_and_written_once(
    redis_server: RedisServer,
) -> None:
    async def scenario() -> None:
        shared = connection(redis_server.url)
        one, two = RedisResendMemo(shared, 60), RedisResendMemo(shared, 60)
        raw = b'{"messages": []}'
        first = CompactedResend(7, 1, 5, orjson.dumps([{"role": "user", "content": "s"}]), 90, 30)
        other = CompactedResend(7, 1, 5, b"[]", 1, 1)
        try:
            assert await two.under_threshold("chat", raw) is None
            await one.remember_under_threshold("chat", raw, 42)
            assert await two.under_threshold("chat", raw) == 42
            assert await two.under_threshold("messages", raw) is None
            await one.remember_compacted("tenant-a", "chat", raw, first)
            # Entries never change: a second writer's entry is dropped.
            await two.remember_compacted("tenant-a", "chat", raw, other)
            assert await two.compacted("tenant-a", "chat", raw) == first
            assert await two.compacted("tenant-b", "chat", raw) is None
            assert await two.compacted("tenant-a", "chat", raw + b" ") is None
            # Each entry expires.
            keys = await shared.asyncio.keys(shared.key("memo", "*"))
            ttls = [await shared.asyncio.ttl(key) for key in keys]
            assert len(ttls) == 2
            assert all(0 < ttl <= 60 for ttl in ttls)
        finally:
            await shared.aclose()

    asyncio.run(scenario())


def test_a_redis_that_goes_away_is_a_miss_and_comes_back(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(server: RedisServer) -> None:
        shared = connection(server.url)
        shared.health = RedisHealth(retry_after_seconds=0.2)
        memos = SharedResendMemos(ResendMemos(), RedisResendMemo(shared, 60))
        try:
            await memos.remember_under_threshold("chat", b"one", 1)
            server.stop()
            # This process still knows what it saw; what it did not see is a miss.
            assert await memos.under_threshold("chat", b"one") == 1
            assert await memos.under_threshold("chat", b"two") is None
            await memos.remember_under_threshold("chat", b"three", 3)
            assert await memos.compacted("t", "chat", b"four") is None
            server.start()
            await asyncio.sleep(0.3)
            await memos.remember_under_threshold("chat", b"five", 5)
            assert await RedisResendMemo(shared, 60).under_threshold("chat", b"five") == 5
        finally:
            await shared.aclose()

    with caplog.at_level(logging.INFO), throwaway_redis() as server:
        asyncio.run(scenario(server))
    outages = [r for r in caplog.records if r.getMessage().startswith("redis unavailable")]
    assert len(outages) == 1
    assert any(r.getMessage().startswith("redis answers again") for r in caplog.records)


def test_a_redis_url_that_is_not_one_is_refused_without_echoing_it() -> None:
    from pydantic import ValidationError

    from app.cli_errors import describe
    from app.settings import Settings

    assert Settings(redis_url="").redis_url is None
    with pytest.raises(ValidationError) as refused:
        Settings(redis_url="http://user:hunter2@cache:6379")
    line = describe(refused.value)
    assert line == (
        "configuration error: COMPACTOR_REDIS_URL: a Redis URL starts with redis://, "
        "rediss:// or unix://"
    )
    assert "hunter2" not in line


def test_the_summary_cache_in_redis_needs_a_redis() -> None:
    from pydantic import ValidationError

    from app.cli_errors import describe
    from app.settings import Settings

    with pytest.raises(ValidationError) as refused:
        Settings(proxy_summary_cache_store="redis")
    assert "COMPACTOR_PROXY_SUMMARY_CACHE_STORE=redis needs COMPACTOR_REDIS_URL" in describe(
        refused.value
    )
    chosen = Settings(proxy_summary_cache_store="redis", redis_url="redis://127.0.0.1:1/0")
    assert chosen.proxy_summary_cache_store == "redis"
