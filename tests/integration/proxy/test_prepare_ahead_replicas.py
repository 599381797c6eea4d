"""Summaries prepared ahead, across replicas (SPEC §16, §18): one background summary per
conversation at a time, whichever replica the load balancer sends each turn to. The
replica that starts it holds the conversation's lease in the shared store (the SQLite
file, or Redis); the other finds the lease held, starts none, and uses the summary the
first one writes to the shared summary cache. A replica that crashed holding a lease
loses it when its time runs out, and another replica makes the summary.

Each replica has its own loopback summarizer, so the test sees which replica called
one; the first one's holds its reply until the test releases it (a slow summary whose
slowness the test decides, not a clock).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from bench.common import free_port
from tests.integration.fake_providers import DEFAULT_SUMMARY, OpenAIFake, Reply
from tests.integration.fake_upstreams import FakeUpstream
from tests.integration.live_server import live_service
from tests.integration.proxy.conftest import proxy_settings
from tests.redis_server import RedisServer

# gpt-4: window 8,192, threshold 6,963; the soft threshold at 0.8 is 5,570 tokens.
MODEL = "gpt-4"
SOFT, THRESHOLD = 5_570, 6_963


def user_turn(i: int, words: int = 100) -> dict[str, Any]:
    return {"role": "user", "content": f"Turn {i}: " + " ".join(f"w{i}x{j}" for j in range(words))}


def _settings(tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake, **more: Any) -> Any:
    return proxy_settings(
        tmp_path,
        upstream,
        summarizer="openai",
        summarizer_base_url=f"{summarizer.base_url}/v1",
        summarizer_model="gpt-4o-mini",
        summarizer_api_key="sk-summarizer",
        prepare_ahead_ratio=0.8,
        **more,
    )


def _post(url: str, history: list[dict[str, Any]]) -> httpx.Response:
    answer = httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": MODEL, "messages": history},
        headers={"authorization": "Bearer sk-upstream"},
        timeout=60,
    )
    answer.raise_for_status()
    return answer


def _turn(url: str, history: list[dict[str, Any]], message: dict[str, Any]) -> httpx.Response:
    """One turn of the agent: its message, the answer appended to its history."""
    history.append(message)
    answer = _post(url, history)
    history.append({"role": "assistant", "content": "ok"})
    return answer


def _outcomes(url: str) -> dict[str, float]:
    found = {}
    for line in httpx.get(f"{url}/metrics", timeout=30).text.splitlines():
        if line.startswith("compactor_prepared_summaries_total{"):
            outcome = line.split('outcome="')[1].split('"')[0]
            found[outcome] = float(line.split()[-1])
    return found


def _until(url: str, outcome: str, count: float = 1) -> None:
    """Polls /metrics until `outcome` was counted `count` times (a safety limit only)."""
    deadline = time.monotonic() + 60
    while _outcomes(url).get(outcome, 0) < count:
        assert time.monotonic() < deadline, f"no background summary ended {outcome}"
        time.sleep(0.05)


def _sqlite_leases(database: Path) -> list[tuple[str, str, float]]:
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT name, holder, expires_at FROM leases").fetchall()
    return [(str(n), str(h), float(e)) for n, h, e in rows]


@pytest.fixture
def summarizers() -> Iterator[tuple[OpenAIFake, OpenAIFake]]:
    with OpenAIFake() as one, OpenAIFake() as two:
        one.script(Reply.held(f"{DEFAULT_SUMMARY}\n- written by replica 1"))
        two.script(*(Reply.ok(f"{DEFAULT_SUMMARY}\n- written by replica 2") for _ in range(5)))
        yield one, two


@pytest.mark.parametrize("shared", ["sqlite", "redis"])
def test_one_summary_per_conversation_across_two_replicas(
    tmp_path: Path,
    upstream: FakeUpstream,
    summarizers: tuple[OpenAIFake, OpenAIFake],
    shared: str,
    request: pytest.FixtureRequest,
) -> None:
    one, two = summarizers
    more: dict[str, Any] = {}
    leases_in_redis = None
    if shared == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        prefix = f"test-{uuid.uuid4().hex[:8]}:"
        # Leases and the summary cache in Redis; the database is the SQLite file still.
        more = {
            "redis_url": server.url,
            "redis_key_prefix": prefix,
            "proxy_summary_cache_store": "redis",
        }
        leases_in_redis = redis.Redis.from_url(server.url)

    def leases() -> list[str]:
        if leases_in_redis is not None:
            return [k.decode() for k in leases_in_redis.keys(f"{more['redis_key_prefix']}lease:*")]
        return [name for name, _, _ in _sqlite_leases(tmp_path / "compactor.db")]

    try:
        with (
            live_service(_settings(tmp_path, upstream, one, **more)) as first,
            live_service(_settings(tmp_path, upstream, two, **more)) as second,
        ):
            history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
            # Replica 1 takes the turns until one is past the soft threshold: it starts
            # the background summary (held by its summarizer) under the lease.
            for turn in range(40):
                answer = _turn(first, history, user_turn(turn))
                if int(answer.headers["x-compactor-tokens-before"]) > SOFT:
                    break
            assert one.request_arrived.wait(30), "replica 1 started no background summary"
            assert len(leases()) == 1

            # The next turn, on replica 2, past the soft threshold too: the lease is
            # held, so replica 2 starts none of its own.
            answer = _turn(second, history, user_turn(100))
            assert int(answer.headers["x-compactor-tokens-before"]) <= THRESHOLD
            assert _outcomes(second).get("leased_elsewhere") == 1
            assert "started" not in _outcomes(second)
            assert two.received == []

            # Replica 1's summary comes back: stored in the shared cache, lease given up.
            one.release.set()
            _until(first, "stored")
            deadline = time.monotonic() + 60
            while leases():
                assert time.monotonic() < deadline, "replica 1 kept its lease"
                time.sleep(0.05)

            # Replica 2 takes every turn from now on, up to the one over the threshold:
            # it finds replica 1's summary ready and calls no summarizer.
            crossed = None
            for turn in range(101, 140):
                answer = _turn(second, history, user_turn(turn))
                if int(answer.headers["x-compactor-tokens-before"]) > THRESHOLD:
                    crossed = answer
                    break
            assert crossed is not None
            assert crossed.headers["x-compactor-compacted"] == "true"
            assert crossed.headers["x-compactor-prepared"] == "ready"
            assert b"written by replica 1" in upstream.received[-1].raw
            # Exactly one summarizer call for the prefix, on either replica.
            assert len(one.received) == 1
            assert two.received == []
    finally:
        if leases_in_redis is not None:
            leases_in_redis.close()


def _serve(tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake, lease: str) -> Any:
    """`compactor serve` in a process of its own (a replica the test can kill)."""
    port = free_port()
    env = {
        **os.environ,
        "COMPACTOR_DATABASE_URL": f"sqlite:///{tmp_path / 'compactor.db'}",
        "COMPACTOR_UPSTREAM_OPENAI_URL": f"{upstream.base_url}/v1",
        "COMPACTOR_SUMMARIZER": "openai",
        "COMPACTOR_SUMMARIZER_BASE_URL": f"{summarizer.base_url}/v1",
        "COMPACTOR_SUMMARIZER_MODEL": "gpt-4o-mini",
        "COMPACTOR_SUMMARIZER_API_KEY": "sk-summarizer",
        "COMPACTOR_PREPARE_AHEAD_RATIO": "0.8",
        "COMPACTOR_PREPARE_AHEAD_LEASE_SECONDS": lease,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, "compactor serve exited at start"
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "compactor serve did not start"
        time.sleep(0.1)


def test_the_lease_of_a_crashed_replica_runs_out_and_another_makes_the_summary(
    tmp_path: Path, upstream: FakeUpstream, summarizers: tuple[OpenAIFake, OpenAIFake]
) -> None:
    _, two = summarizers
    database = tmp_path / "compactor.db"
    with OpenAIFake() as one:
        # Never answers: replica 1 is summarizing when it is killed.
        one.script(Reply.slow())
        _crash_while_summarizing(tmp_path, upstream, one, two, database)


def _crash_while_summarizing(
    tmp_path: Path, upstream: FakeUpstream, one: OpenAIFake, two: OpenAIFake, database: Path
) -> None:
    # Replica 1 is a process of its own, killed while it summarizes: it gives nothing up.
    process, first = _serve(tmp_path, upstream, one, lease="10")
    try:
        settings = _settings(tmp_path, upstream, two, prepare_ahead_lease_seconds=10)
        with live_service(settings) as second:
            history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
            for turn in range(40):
                answer = _turn(first, history, user_turn(turn))
                if int(answer.headers["x-compactor-tokens-before"]) > SOFT:
                    break
            assert one.request_arrived.wait(30), "replica 1 started no background summary"
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
            (held,) = _sqlite_leases(database)

            # Held still (nobody released it): replica 2 starts no summary of its own ...
            answer = _turn(second, history, {"role": "user", "content": "next"})
            assert int(answer.headers["x-compactor-tokens-before"]) <= THRESHOLD
            assert _outcomes(second).get("leased_elsewhere") == 1
            assert two.received == []

            # ... until the lease runs out (nobody renews it): then replica 2 takes it and
            # makes the summary; the turn over the threshold finds it ready.
            deadline = time.monotonic() + 60
            while "started" not in _outcomes(second):
                assert time.monotonic() < deadline, "the crashed replica's lease never ran out"
                time.sleep(0.2)
                _turn(second, history, {"role": "user", "content": "more"})
            assert time.time() >= held[2]
            _until(second, "stored")
            assert len(two.received) == 1
            crossed = None
            for turn in range(100, 140):
                answer = _turn(second, history, user_turn(turn))
                if int(answer.headers["x-compactor-tokens-before"]) > THRESHOLD:
                    crossed = answer
                    break
            assert crossed is not None
            assert crossed.headers["x-compactor-prepared"] == "ready"
            assert b"written by replica 2" in upstream.received[-1].raw
            assert len(two.received) == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


def test_a_turn_too_large_for_the_window_waits_for_the_other_replicas_summary(
    tmp_path: Path, upstream: FakeUpstream, summarizers: tuple[OpenAIFake, OpenAIFake]
) -> None:
    one, two = summarizers
    with (
        live_service(_settings(tmp_path, upstream, one)) as first,
        live_service(_settings(tmp_path, upstream, two)) as second,
    ):
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        for turn in range(40):
            answer = _turn(first, history, user_turn(turn))
            if int(answer.headers["x-compactor-tokens-before"]) > SOFT:
                break
        assert one.request_arrived.wait(30), "replica 1 started no background summary"

        # A large tool result arrives on replica 2: the request no longer fits gpt-4's
        # window, so it waits for the summary replica 1 is making rather than making one.
        answers: list[httpx.Response] = []
        waiting = threading.Thread(
            target=lambda: answers.append(_turn(second, history, user_turn(200, words=600)))
        )
        waiting.start()
        try:
            _until(second, "leased_elsewhere")
            assert answers == [] and two.received == []
        finally:
            one.release.set()
            waiting.join(timeout=120)
        (answer,) = answers
        assert int(answer.headers["x-compactor-tokens-before"]) > 8_192
        assert answer.headers["x-compactor-prepared"] == "waited"
        assert answer.headers["x-compactor-compacted"] == "true"
        assert b"written by replica 1" in upstream.received[-1].raw
        assert len(one.received) == 1
        assert two.received == []
