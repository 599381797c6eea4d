"""A session's compaction prepared ahead (SPEC §16, session mode): past the soft
threshold the session's next compaction is made in the background, so the bound turn
that crosses the threshold records it without calling the summarizer; not ready yet, a
turn that still fits the window goes on uncompacted (`pending`) and the next one uses it.

The summarizer is a loopback fake whose replies the test holds and releases: the tests
see which turn called it and what each turn got, never how long anything took.
"""

from __future__ import annotations

import itertools
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
THRESHOLD, SOFT = 6_963, 5_570


@pytest.fixture
def summarizer() -> Iterator[OpenAIFake]:
    with OpenAIFake() as fake:
        yield fake


def _session(url: str) -> str:
    created = httpx.post(f"{url}/sessions", json={"model": MODEL, "format": "openai"})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def _turn(client: Any, history: list[dict[str, Any]]) -> Any:
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
    history.append({"role": "assistant", "content": raw.parse().choices[0].message.content})
    return raw


def _compactions(url: str, sid: str) -> list[dict[str, Any]]:
    listed = httpx.get(f"{url}/sessions/{sid}/compactions")
    return list(listed.json()["compactions"])


def test_the_crossing_turn_records_the_prepared_compaction_without_a_summarizer_call(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        sid = _session(url)
        client = openai_client(url, **{"X-Compactor-Session": sid})
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        crossed = None
        for turn in range(40):
            history.append(user_turn(turn))
            calls = len(summarizer.received)
            raw = _turn(client, history)
            tokens = int(raw.headers["x-compactor-tokens-before"])
            if tokens > THRESHOLD:
                crossed = raw
                # The crossing turn itself called nothing.
                assert len(summarizer.received) == calls
                break
            assert raw.headers["x-compactor-compacted"] == "false"
            if tokens > SOFT:
                until_stored(url, 1)
            else:
                assert summarizer.received == []
        assert crossed is not None
        assert crossed.headers["x-compactor-compacted"] == "true"
        assert crossed.headers["x-compactor-prepared"] == "ready"
        assert int(crossed.headers["x-compactor-tokens-after"]) <= THRESHOLD
        assert len(summarizer.received) == 1
        [record] = _compactions(url, sid)
        assert record["trigger"] == "auto"
        # What the upstream got: the prepared summary, then the entries it kept and every
        # one added since — the turn's own message last.
        sent = upstream.bodies("/chat/completions")[-1]["messages"]
        assert sent[0] == history[0]
        assert record["summary"] in str(sent[1]["content"])
        assert sent[-1] == history[-2]


def test_not_ready_yet_the_turn_goes_on_uncompacted_and_the_next_one_uses_it(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    summarizer.script(Reply.held())
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        sid = _session(url)
        client = openai_client(url, **{"X-Compactor-Session": sid})
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        pending = None
        for turn in range(40):
            history.append(user_turn(turn))
            raw = _turn(client, history)
            if int(raw.headers["x-compactor-tokens-before"]) > THRESHOLD:
                pending = raw
                break
        assert pending is not None and summarizer.received, "the summary never started"
        assert pending.headers["x-compactor-prepared"] == "pending"
        assert pending.headers["x-compactor-compacted"] == "false"
        assert upstream.bodies("/chat/completions")[-1]["messages"] == history[:-1]
        assert _compactions(url, sid) == []
        summarizer.release.set()
        until_stored(url, 1)
        history.append(user_turn(99))
        ready = _turn(client, history)
        assert ready.headers["x-compactor-compacted"] == "true"
        assert ready.headers["x-compactor-prepared"] == "ready"
        assert len(summarizer.received) == 1
        assert len(_compactions(url, sid)) == 1


def test_rest_prepare_uses_the_compaction_prepared_by_an_earlier_prepare(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        sid = _session(url)
        result: dict[str, Any] = {}
        for turn in range(40):
            added = httpx.post(
                f"{url}/sessions/{sid}/messages", json={"messages": [user_turn(turn)]}
            )
            assert added.status_code in (200, 201), added.text
            calls = len(summarizer.received)
            result = httpx.post(f"{url}/sessions/{sid}/prepare", json={}).json()
            if result["compacted"]:
                assert len(summarizer.received) == calls
                break
            if result["context"]["estimate"]["tokens"] > SOFT:
                until_stored(url, 1)
        assert result["compacted"], result
        assert len(summarizer.received) == 1
        assert result["compaction"]["tokens_before"] > THRESHOLD
        assert result["context"]["estimate"]["tokens"] <= THRESHOLD


def test_off_compacts_inline_and_a_history_under_the_soft_threshold_starts_nothing(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    settings = ahead_settings(tmp_path, upstream, summarizer, prepare_ahead_ratio="off")
    with live_service(settings) as url:
        sid = _session(url)
        client = openai_client(url, **{"X-Compactor-Session": sid})
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        for turn in range(40):
            history.append(user_turn(turn))
            calls = len(summarizer.received)
            raw = _turn(client, history)
            if int(raw.headers["x-compactor-tokens-before"]) <= THRESHOLD:
                assert len(summarizer.received) == calls == 0
            else:
                assert len(summarizer.received) == calls + 1
                assert "x-compactor-prepared" not in raw.headers
                break
        assert stored(url) == 0


def _grow_until_started(
    url: str, client: Any, history: list[dict[str, Any]], under: int
) -> int | None:
    """Bound turns until one starts a background compaction; its tokens (None: none had
    started by the first turn over `under` tokens)."""
    before = started(url)
    for turn in range(60):
        history.append(user_turn(turn))
        tokens = int(_turn(client, history).headers["x-compactor-tokens-before"])
        if started(url) > before:
            return tokens
        if tokens > under:
            return None
    return None


def test_a_session_set_off_compacts_inline_though_the_service_prepares_ahead(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        created = httpx.post(
            f"{url}/sessions",
            json={"model": MODEL, "format": "openai", "prepare_ahead_ratio": "off"},
        )
        sid = created.json()["id"]
        client = openai_client(url, **{"X-Compactor-Session": sid})
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        # Past the soft threshold and up to the crossing, nothing starts in the background;
        # the crossing turn compacts inline.
        assert _grow_until_started(url, client, history, THRESHOLD) is None
        assert len(summarizer.received) == 1 and stored(url) == 0
        [record] = _compactions(url, sid)
        assert record["tokens_before"] > THRESHOLD


def test_a_session_with_a_low_ratio_prepares_earlier_than_the_default(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    low = 0.4  # soft threshold 2,785 tokens, against 5,570 at the default 0.8
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        default = openai_client(url, **{"X-Compactor-Session": _session(url)})
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        at_default = _grow_until_started(url, default, history, THRESHOLD)
        assert at_default is not None and at_default > SOFT
        created = httpx.post(
            f"{url}/sessions", json={"model": MODEL, "format": "openai", "prepare_ahead_ratio": low}
        )
        early = openai_client(url, **{"X-Compactor-Session": created.json()["id"]})
        history = [{"role": "system", "content": "You are terse."}]
        at_low = _grow_until_started(url, early, history, THRESHOLD)
        assert at_low is not None and low * THRESHOLD < at_low <= SOFT
        until_stored(url, 2)


def test_patch_changes_the_ratio_for_the_next_turn(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        created = httpx.post(
            f"{url}/sessions",
            json={"model": MODEL, "format": "openai", "prepare_ahead_ratio": "off"},
        )
        sid = created.json()["id"]
        client = openai_client(url, **{"X-Compactor-Session": sid})
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        # Off: past the default's soft threshold, still nothing prepared.
        assert _grow_until_started(url, client, history, SOFT) is None
        patched = httpx.patch(f"{url}/sessions/{sid}", json={"prepare_ahead_ratio": None})
        assert patched.status_code == 200, patched.text
        history.append(user_turn(len(history)))
        raw = _turn(client, history)
        assert int(raw.headers["x-compactor-tokens-before"]) <= THRESHOLD
        assert started(url) == 1
        until_stored(url, 1)
        assert len(summarizer.received) == 1


def test_a_compaction_prepared_before_the_ratio_changed_still_applies(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        sid = _session(url)
        client = openai_client(url, **{"X-Compactor-Session": sid})
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        assert _grow_until_started(url, client, history, THRESHOLD) is not None
        until_stored(url, 1)
        # The ratio says when to prepare, not what: the prepared compaction is the same.
        patched = httpx.patch(f"{url}/sessions/{sid}", json={"prepare_ahead_ratio": 0.5})
        assert patched.status_code == 200, patched.text
        crossed = None
        for turn in range(60, 90):
            history.append(user_turn(turn))
            raw = _turn(client, history)
            if raw.headers["x-compactor-compacted"] == "true":
                crossed = raw
                break
        assert crossed is not None
        assert crossed.headers["x-compactor-prepared"] == "ready"
        assert len(summarizer.received) == 1


def test_once_its_pace_is_known_a_session_prepares_just_before_the_threshold(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake, monkeypatch: Any
) -> None:
    clock = TurnClock()
    monkeypatch.setattr(ahead_pace, "_default_clock", clock)
    with live_service(ahead_settings(tmp_path, upstream, summarizer)) as url:
        sid = _session(url)
        client = openai_client(url, **{"X-Compactor-Session": sid})
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
        tokens_by_turn: list[int] = []
        started_on: list[int] = []  # the turns that started a background compaction
        for turn in range(80):
            history.append(user_turn(turn))
            clock.now += 10
            before, calls = started(url), len(summarizer.received)
            raw = _turn(client, history)
            tokens_by_turn.append(int(raw.headers["x-compactor-tokens-before"]))
            if tokens_by_turn[-1] > THRESHOLD:
                # No crossing turn waits for a summary: ready, or started now (pending).
                assert len(summarizer.received) == calls
                assert raw.headers["x-compactor-prepared"] in ("ready", "pending")
            if started(url) > before:
                started_on.append(turn)
                until_stored(url, len(started_on))
            if len(_compactions(url, sid)) == 2:
                break
        assert len(_compactions(url, sid)) == 2, tokens_by_turn
        assert len(started_on) == len(summarizer.received) == 2
        growth = max(b - a for a, b in itertools.pairwise(tokens_by_turn) if b > a)
        # The first: nothing known of the session's pace, the soft threshold started it.
        first = started_on[0]
        assert tokens_by_turn[first] > SOFT >= tokens_by_turn[first - 1]
        # The second: a summary takes a fraction of a turn here, so it was held back past
        # the soft threshold until the threshold was a turn away (or crossed).
        second = started_on[1]
        crossed = next(t for t, tokens in enumerate(tokens_by_turn) if tokens > THRESHOLD)
        past_soft = next(t for t in range(crossed + 1, second + 1) if tokens_by_turn[t] > SOFT)
        assert second > past_soft, tokens_by_turn
        assert tokens_by_turn[second] >= THRESHOLD - growth, tokens_by_turn
