"""Resend memos (SPEC §10, §18): what a compacted entry holds, and what asking Redis
costs next to asking this process.

1. Size: the 377-message Claude Code transcript of tests/data compacted by `/compact`
   (extractive summarizer, a 60k window), the forwarded body's bytes against the recipe
   the memo keeps (`compacted_resend`: the changed messages only).
2. Lookups: `under_threshold` and `compacted` hits, per-process memos against a real
   redis-server on loopback (started here; skipped without the binary), in one run.
3. Summary cache hits (`SummaryCache.longest` with a fresh cache object each time, so
   the listing and the summary are read from the store): SQLite file, a throwaway
   PostgreSQL (when its binaries are here) and Redis, in one run.

Run: .venv/bin/python bench/resend_memo.py [--n 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402

from app.main import create_app  # noqa: E402
from app.services.ports import SummaryStore  # noqa: E402
from app.services.proxy.resend_memo import ResendMemos, compacted_resend  # noqa: E402
from app.services.proxy.summary_cache import (  # noqa: E402
    CachedSummary,
    PrefixHashes,
    SummaryCache,
    scope_key,
)
from app.settings import Settings  # noqa: E402
from app.store.database import create_db_engine, session_factory  # noqa: E402
from app.store.migrate import upgrade  # noqa: E402
from app.store.redis_connection import RedisConnection  # noqa: E402
from app.store.redis_memos import RedisResendMemo  # noqa: E402
from app.store.redis_summaries import RedisSummaryStore  # noqa: E402
from app.store.summaries import SqlSummaryStore  # noqa: E402
from app.store.views import CompactedResend  # noqa: E402
from tests.postgres import server_bin_dir, throwaway_cluster  # noqa: E402
from tests.redis_server import redis_server_binary, throwaway_redis  # noqa: E402

TRANSCRIPT = ROOT / "tests/data/claude_code/fa812bfe-b295-4cca-9c2f-fdf01028cb46.openai.json"


def recipe_of_a_real_compaction() -> tuple[CompactedResend, int, int]:
    data = json.loads(TRANSCRIPT.read_text("utf-8"))
    messages = data["messages"] if isinstance(data, dict) else data
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(database_url=f"sqlite:///{folder}/c.db", auto_migrate=True)
        with TestClient(create_app(settings)) as client:
            answer = client.post(
                "/compact",
                json={"model": "gpt-4.1", "messages": messages, "context_window": 60000},
            )
            answer.raise_for_status()
    forwarded = answer.json()["messages"]
    recipe = compacted_resend(messages, forwarded, (0, 0))
    assert recipe is not None
    body = len(orjson.dumps({"model": "gpt-4.1", "messages": forwarded}))
    return recipe, len(orjson.dumps(messages)), body


async def lookups(memo: object, raw: bytes, n: int) -> float:
    """Median seconds of one `under_threshold` + one `compacted` hit."""
    times = []
    for _ in range(n):
        started = time.perf_counter()
        assert await memo.under_threshold("chat", raw) is not None  # type: ignore[attr-defined]
        assert await memo.compacted("t", "chat", raw) is not None  # type: ignore[attr-defined]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def compare(recipe: CompactedResend, n: int, url: str) -> tuple[float, float]:
    raw = b'{"model": "gpt-4.1", "messages": []}' * 1000
    local = ResendMemos()
    redis = RedisConnection(url, prefix="bench:", timeout_seconds=2.0)
    shared = RedisResendMemo(redis, 60)
    for memo in (local, shared):
        await memo.remember_under_threshold("chat", raw, 10)
        await memo.remember_compacted("t", "chat", raw, recipe)
    try:
        return await lookups(local, raw, n), await lookups(shared, raw, n)
    finally:
        await redis.aclose()


def summary_hits(store: SummaryStore, n: int) -> float:
    """Median seconds of one summary cache hit read from the store (20 entries stored)."""
    history = [{"role": "user", "content": f"message {i} " * 50} for i in range(60)]
    scope = scope_key("openai", None, [], [])
    prefixes = PrefixHashes(history)
    for length in range(10, 50, 2):
        message = {"role": "user", "content": f"summary of {length} " * 200}
        SummaryCache(store).store("t", scope, prefixes, CachedSummary(length, 100, message))
    times = []
    for _ in range(n):
        cache = SummaryCache(store)  # nothing read before: the store answers
        started = time.perf_counter()
        assert cache.longest("t", scope, prefixes) is not None
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def summary_cache_comparison(n: int, redis_url: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/c.db"
        upgrade(url)
        engine = create_db_engine(url)
        results = {"SQLite": summary_hits(SqlSummaryStore(session_factory(engine), 1000), n)}
        engine.dispose()
    if server_bin_dir() is not None:
        with throwaway_cluster() as pg:
            upgrade(pg)
            engine = create_db_engine(pg)
            store = SqlSummaryStore(session_factory(engine), 1000)
            results["PostgreSQL"] = summary_hits(store, n)
            engine.dispose()
    connection = RedisConnection(redis_url, prefix="bench-sc:", timeout_seconds=2.0)
    results["Redis"] = summary_hits(RedisSummaryStore(connection, 1000), n)
    asyncio.run(connection.aclose())
    base = results["Redis"]
    for name, seconds in results.items():
        print(f"summary hit, {name:<10} {seconds * 1e6:>9.1f} µs   /redis = {seconds / base:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    n = parser.parse_args().n
    recipe, received, body = recipe_of_a_real_compaction()
    print(f"received history        {received:>9,} bytes")
    print(f"forwarded body          {body:>9,} bytes")
    ratio = body / recipe.size
    print(f"memo entry (recipe)     {recipe.size:>9,} bytes   body/recipe = {ratio:.1f}")
    if redis_server_binary() is None:
        print("redis-server not found: lookup comparison skipped")
        return
    with throwaway_redis() as server:
        local, shared = asyncio.run(compare(recipe, n, server.url))
        print(f"hits, per process       {local * 1e6:>9.1f} µs (median of {n})")
        ratio = shared / local
        print(f"hits, Redis on loopback {shared * 1e6:>9.1f} µs   redis/local = {ratio:.0f}")
        summary_cache_comparison(max(50, n // 10), server.url)


if __name__ == "__main__":
    main()
