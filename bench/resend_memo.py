"""Resend memos (SPEC §10, §18): what a compacted entry holds, and what asking Redis
costs next to asking this process.

1. Size: the 377-message Claude Code transcript of tests/data compacted by `/compact`
   (extractive summarizer, a 60k window), the forwarded body's bytes against the recipe
   the memo keeps (`compacted_resend`: the changed messages only).
2. Lookups: `under_threshold` and `compacted` hits, per-process memos against a real
   redis-server on loopback (started here; skipped without the binary), in one run.

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
from app.services.proxy.resend_memo import ResendMemos, compacted_resend  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.redis_connection import RedisConnection  # noqa: E402
from app.store.redis_memos import RedisResendMemo  # noqa: E402
from app.store.views import CompactedResend  # noqa: E402
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
    print(f"hits, Redis on loopback {shared * 1e6:>9.1f} µs   redis/local = {shared / local:.0f}")


if __name__ == "__main__":
    main()
