"""Summaries prepared ahead (SPEC §16): past the soft threshold the proxy summarizes in
the background, so the turn that crosses the threshold finds the summary ready and does
not call the summarizer itself; not ready yet, a request that still fits the window goes
on uncompacted (`pending`) and the next turn uses the summary.

The summarizer is a loopback fake whose replies the test holds and releases: what the
tests see is which turn called it and what each turn got, never how long anything took.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.services import ahead_pace
from tests.integration.fake_providers import OpenAIFake, Reply
from tests.integration.fake_upstreams import FakeUpstream
from tests.integration.live_server import live_service
from tests.integration.proxy.clients import openai_client
from tests.integration.proxy.prepare_ahead_helpers import (
    TurnClock,
    ahead_settings,
    started,
    stored,
    until_stored,
    user_turn,
)

# gpt-4: window 8,192, threshold 6,963; the soft threshold at 0.8 is 5,570 tokens.
MODEL = "gpt-4"


@pytest.fixture
def summarizer() -> Iterator[OpenAIFake]:
    with OpenAIFake() as fake:
        yield fake


def _turn(client: Any, history: list[dict[str, Any]]) -> Any:
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
    history.append({"role": "assistant", "content": raw.parse().choices[0].message.content})
    return raw


def test_the_summary_is_ready_when_the_threshold_is_crossed(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        client = openai_client(url)
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        crossed = None
        for turn in range(40):
            history.append(user_turn(turn))
            raw = _turn(client, history)
            tokens = int(raw.headers["x-compactor-tokens-before"])
            if 5_570 < tokens <= 6_963:
                # Started in the background, under the threshold: the turn went on as is.
                assert raw.headers["x-compactor-compacted"] == "false"
                until_stored(url, 1)
            elif tokens <= 5_570:
                assert summarizer.received == []
            if tokens > 6_963:
                crossed = raw
                break
        assert crossed is not None
        assert crossed.headers["x-compactor-compacted"] == "true"
        assert crossed.headers["x-compactor-prepared"] == "ready"
        # Only the background call: the crossing turn did not summarize inline.
        assert len(summarizer.received) == 1


def test_not_ready_yet_the_request_goes_on_uncompacted_and_the_next_turn_uses_it(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    summarizer.script(Reply.held())
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        client = openai_client(url)
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        pending = None
        for turn in range(40):
            history.append(user_turn(turn))
            raw = _turn(client, history)
            if int(raw.headers["x-compactor-tokens-before"]) > 6_963:
                pending = raw
                break
        assert pending is not None and summarizer.received, "the summary never started"
        assert pending.headers["x-compactor-prepared"] == "pending"
        assert pending.headers["x-compactor-compacted"] == "false"
        assert upstream.received[-1].body["messages"] == history[:-1]
        summarizer.release.set()
        until_stored(url, 1)
        history.append(user_turn(99))
        ready = _turn(client, history)
        assert ready.headers["x-compactor-compacted"] == "true"
        assert ready.headers["x-compactor-prepared"] == "ready"
        assert len(summarizer.received) == 1


def test_off_summarizes_inline_and_never_under_the_threshold(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    settings = ahead_settings(tmp_path, upstream, summarizer, prepare_ahead_ratio="off")
    with live_service(settings) as url:
        client = openai_client(url)
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        for turn in range(40):
            history.append(user_turn(turn))
            calls = len(summarizer.received)
            raw = _turn(client, history)
            if int(raw.headers["x-compactor-tokens-before"]) <= 6_963:
                assert len(summarizer.received) == calls
            else:
                assert len(summarizer.received) == calls + 1
                assert "x-compactor-prepared" not in raw.headers
                break


def test_a_history_under_the_soft_threshold_starts_nothing(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        client = openai_client(url)
        history: list[dict[str, Any]] = [user_turn(i) for i in range(12)]
        raw = _turn(client, history)
        assert int(raw.headers["x-compactor-tokens-before"]) <= 5_570
        assert summarizer.received == []
        assert stored(url) == 0
        assert "compactor_prepared_wasted_total 0.0" in httpx.get(f"{url}/metrics").text


def test_a_turn_over_the_window_with_nothing_prepared_compacts_inline(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    # From under the soft threshold to past the window in one turn (a huge tool result):
    # no summary was on its way, so the turn compacts inline; it starts no background
    # summary only to wait for it.
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        client = openai_client(url)
        history: list[dict[str, Any]] = [user_turn(i) for i in range(6)]
        raw = _turn(client, history)
        assert int(raw.headers["x-compactor-tokens-before"]) <= 5_570
        history.append(user_turn(50, words=2_500))
        raw = _turn(client, history)
        assert int(raw.headers["x-compactor-tokens-before"]) > 8_192
        assert raw.headers["x-compactor-compacted"] == "true"
        assert "x-compactor-prepared" not in raw.headers
        assert len(summarizer.received) == 1
        assert started(url) == 0


def _outcomes(url: str) -> dict[str, float]:
    found = {}
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("compactor_prepared_summaries_total{"):
            outcome = line.split('outcome="')[1].split('"')[0]
            found[outcome] = float(line.split()[-1])
    return found


def _until_idle(url: str) -> None:
    """Polls /metrics until every started background summary has ended."""
    deadline = time.monotonic() + 60
    while True:
        outcomes = _outcomes(url)
        started = outcomes.pop("started", 0.0)
        if sum(outcomes.values()) >= started:
            return
        assert time.monotonic() < deadline, "a background summary never ended"
        time.sleep(0.05)


def test_a_failed_background_summary_is_retried_once_and_never_fails_a_turn(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    # A 400 is not retried by the transport: each background attempt is one call.
    summarizer.script(*(Reply.status_only(400, {"error": {"message": "no"}}) for _ in range(2)))
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        client = openai_client(url)
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        compacted = None
        for turn in range(40):
            history.append(user_turn(turn))
            raw = _turn(client, history)
            assert raw.status_code == 200
            _until_idle(url)
            if raw.headers["x-compactor-compacted"] == "true":
                compacted = raw
                break
        assert compacted is not None
        # Tried, retried once, then given up: the turn compacted inline (third call).
        assert _outcomes(url) == {"started": 2.0, "failed": 2.0}
        assert len(summarizer.received) == 3
        assert "x-compactor-prepared" not in compacted.headers


def test_a_prepared_summary_waits_for_the_turn_that_crosses_the_threshold(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake, monkeypatch: Any
) -> None:
    """After the first compaction a stateless caller's history is forwarded with the
    summary in use; the next one, prepared past the soft threshold, replaces it only on
    the turn that would cross the threshold with it — not at once, which would compact at
    the soft threshold each time (more summaries, shorter kept tails)."""
    # A clock that stands still: the conversation's pace is never known, so the second
    # summary too starts at the soft threshold, turns before it is needed (what a
    # conversation whose summaries take longer than its turns does).
    monkeypatch.setattr(ahead_pace, "_default_clock", lambda: 1_000.0)
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        client = openai_client(url)
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        seen: list[tuple[int, str | None]] = []
        for turn in range(80):
            history.append(user_turn(turn))
            raw = _turn(client, history)
            after = int(raw.headers["x-compactor-tokens-after"])
            seen.append((after, raw.headers.get("x-compactor-prepared")))
            if raw.headers["x-compactor-compacted"] == "true" and after > 5_570:
                # Past the soft threshold with the first summary: the second is prepared.
                until_stored(url, 2)
            if [p for _, p in seen].count("ready") == 2:
                break
        first, second = [i for i, (_, p) in enumerate(seen) if p == "ready"]
        started = next(i for i in range(first, second) if seen[i][0] > 5_570)
        waited = seen[started + 1 : second]
        # Stored, then held back while the summary in use still fit: the history grew on
        # it, under the threshold, with no summary applied.
        assert waited, "the prepared summary was used on the turn after it was stored"
        assert all(p is None and a <= 6_963 for a, p in waited)
        assert [a for a, _ in waited] == sorted(a for a, _ in waited)
        # The crossing turn used it, and it shrank the history: two summaries in all.
        assert seen[second][0] < waited[-1][0]
        assert len(summarizer.received) == 2


def test_once_its_pace_is_known_a_conversation_prepares_just_before_the_threshold(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake, monkeypatch: Any
) -> None:
    """A stateless caller's second summary, with its first one's time and its turns'
    known, starts when the threshold is a summary's time plus one turn away — not at the
    soft threshold, turns before it is needed — and no turn waits for a summary."""
    clock = TurnClock()
    monkeypatch.setattr(ahead_pace, "_default_clock", clock)
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        client = openai_client(url)
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        forwarded: list[int] = []  # the tokens each turn went upstream with
        started_on: list[int] = []
        for turn in range(80):
            history.append(user_turn(turn))
            clock.now += 10  # the agent's turn: ten seconds
            before, calls = started(url), len(summarizer.received)
            raw = _turn(client, history)
            # Never inline: a turn calls the summarizer only in the background.
            assert raw.headers.get("x-compactor-prepared") != "waited"
            forwarded.append(int(raw.headers["x-compactor-tokens-after"]))
            if started(url) > before:
                started_on.append(turn)
                until_stored(url, len(started_on))
            else:
                assert len(summarizer.received) == calls
            if len(started_on) == 2:
                break
        assert len(started_on) == 2, forwarded
        first, second = started_on
        # The first: nothing known of the conversation's pace, the soft threshold started it.
        assert forwarded[first] > 5_570 >= forwarded[first - 1]
        # The second was held back past the soft threshold, to a turn from the threshold.
        growth = max(b - a for a, b in itertools.pairwise(forwarded) if b > a)
        used = next(t for t in range(first + 1, second) if forwarded[t] < forwarded[t - 1])
        past_soft = next(t for t in range(used, second + 1) if forwarded[t] > 5_570)
        assert second > past_soft, forwarded
        assert forwarded[second] >= 6_963 - growth, forwarded
