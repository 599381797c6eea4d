"""Two replicas behind a load balancer (SPEC §18): two real servers on one PostgreSQL
and one Redis make the same decision for the same bytes, whichever of them is asked.

Each replica has its own summarizer, and they write different summaries: a replica
that compacted a body itself instead of recognising what the other forwarded would
send other bytes upstream."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.integration.fake_providers import DEFAULT_SUMMARY, OpenAIFake, Reply
from tests.integration.fake_upstreams import FakeUpstream
from tests.integration.live_server import live_service
from tests.integration.proxy.clients import openai_client
from tests.integration.proxy.conftest import proxy_settings
from tests.redis_server import RedisServer, throwaway_redis

# gpt-4's registry window is 8,192 tokens: threshold 6,963.
MODEL = "gpt-4"


def user_turn(topic: str, i: int, words: int = 100) -> dict[str, Any]:
    return {
        "role": "user",
        "content": f"{topic} {i}: " + " ".join(f"w{i}x{j}" for j in range(words)),
    }


def history(topic: str, turns: int) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are terse."}] + [
        user_turn(topic, i) for i in range(turns)
    ]


@pytest.fixture
def summarizers() -> Iterator[tuple[OpenAIFake, OpenAIFake]]:
    with OpenAIFake() as one, OpenAIFake() as two:
        one.script(*(Reply.ok(f"{DEFAULT_SUMMARY}\n- written by replica 1") for _ in range(20)))
        two.script(*(Reply.ok(f"{DEFAULT_SUMMARY}\n- written by replica 2") for _ in range(20)))
        yield one, two


@pytest.fixture
def replicas(
    tmp_path: Path,
    upstream: FakeUpstream,
    database_url: str,
    redis_server: RedisServer,
    summarizers: tuple[OpenAIFake, OpenAIFake],
    summary_cache_store: str,
) -> Iterator[tuple[str, str, str]]:
    prefix = f"test-{uuid.uuid4().hex[:8]}:"

    def settings(summarizer: OpenAIFake) -> Any:
        return proxy_settings(
            tmp_path,
            upstream,
            database_url=database_url,
            redis_url=redis_server.url,
            redis_key_prefix=prefix,
            # One summary per tenant: the next compaction evicts the first one, so only
            # the shared resend memo can still tell a replica what was forwarded.
            proxy_summary_cache_entries=1,
            proxy_summary_cache_store=summary_cache_store,
            summarizer="openai",
            summarizer_base_url=f"{summarizer.base_url}/v1",
            summarizer_model="gpt-4o-mini",
            summarizer_api_key="sk-summarizer",
        )

    one, two = summarizers
    with live_service(settings(one)) as first, live_service(settings(two)) as second:
        yield first, second, prefix


@pytest.mark.parametrize("summary_cache_store", ["database", "redis"])
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_two_replicas_on_one_postgresql_and_one_redis_agree_on_every_cached_decision(
    replicas: tuple[str, str, str],
    upstream: FakeUpstream,
    summarizers: tuple[OpenAIFake, OpenAIFake],
    redis_server: RedisServer,
    summary_cache_store: str,
) -> None:
    first, second, prefix = replicas
    one, two = openai_client(first), openai_client(second)
    summarizer_one, summarizer_two = summarizers

    def forwarded() -> bytes:
        return upstream.received[-1].raw

    # A body compacted by replica 1 ...
    big = history("alpha", 40)
    answer = one.chat.completions.with_raw_response.create(model=MODEL, messages=big)
    assert answer.headers["x-compactor-compacted"] == "true"
    compacted_by_one, headers_one = forwarded(), answer.headers
    assert b"written by replica 1" in compacted_by_one
    assert len(summarizer_one.received) == 1

    # ... continued on replica 2: the summary cache (in PostgreSQL or in Redis) gives it
    # replica 1's summary, so replica 2 calls no summarizer.
    continued = [*big, {"role": "assistant", "content": "ok"}, user_turn("alpha", 40)]
    answer = two.chat.completions.with_raw_response.create(model=MODEL, messages=continued)
    assert answer.headers["x-compactor-compacted"] == "true"
    assert b"written by replica 1" in forwarded()
    assert len(summarizer_two.received) == 0

    # Another history of the same tenant compacted on replica 1 evicts that summary.
    one.chat.completions.create(model=MODEL, messages=history("beta", 40))
    assert len(summarizer_one.received) == 2

    # The first body resent, now to replica 2: recognised from the shared resend memo,
    # forwarded with exactly the bytes replica 1 forwarded, the same answer headers.
    answer = two.chat.completions.with_raw_response.create(model=MODEL, messages=big)
    assert forwarded() == compacted_by_one
    for header in (
        "x-compactor-compacted",
        "x-compactor-tokens-before",
        "x-compactor-tokens-after",
    ):
        assert answer.headers[header] == headers_one[header]
    assert len(summarizer_two.received) == 0

    # A body under the threshold counted by replica 2 is known to replica 1 as well.
    small = history("gamma", 3)
    answer = two.chat.completions.with_raw_response.create(model=MODEL, messages=small)
    assert answer.headers["x-compactor-compacted"] == "false"
    again = one.chat.completions.with_raw_response.create(model=MODEL, messages=small)
    assert again.headers["x-compactor-tokens-before"] == answer.headers["x-compactor-tokens-before"]
    shared = redis.Redis.from_url(redis_server.url)
    try:
        assert len(shared.keys(f"{prefix}memo:under:*")) == 1
        assert len(shared.keys(f"{prefix}memo:compacted:*")) == 3
        # The summary cache is where it was asked to be (one entry: the bound).
        in_redis = len(shared.keys(f"{prefix}sc:entry:*"))
        assert in_redis == (1 if summary_cache_store == "redis" else 0)
    finally:
        shared.close()


def test_the_proxy_answers_while_redis_is_down(
    tmp_path: Path, upstream: FakeUpstream, redis_server: RedisServer
) -> None:
    with throwaway_redis() as server:
        settings = proxy_settings(tmp_path, upstream, redis_url=server.url)
        with live_service(settings) as url:
            server.stop()
            body = {"model": "gpt-4", "messages": [{"role": "user", "content": "hi"}]}
            for _ in range(2):
                answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)
                assert answer.status_code == 200
                assert answer.headers["x-compactor-compacted"] == "false"
    assert len(upstream.bodies("/chat/completions")) == 2
