"""Transparent compaction in the proxy: over the threshold of the request's model the
history is compacted before it is forwarded; the summary cache makes a stateless caller
that resends its history every turn cost one summarizer call per compaction; overflow
answers are recovered from once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.settings import Settings
from tests.integration.fake_providers import DEFAULT_SUMMARY, OpenAIFake, Reply
from tests.integration.fake_upstreams import (
    Answer,
    FakeUpstream,
    context_too_long_anthropic,
    context_too_long_openai,
)
from tests.integration.live_server import live_service
from tests.integration.proxy.clients import anthropic_client, openai_client
from tests.integration.proxy.conftest import proxy_settings

# gpt-4's registry window is 8,192 tokens: threshold 6,963, a kept tail of 1,740.
MODEL = "gpt-4"
THRESHOLD = 6_963


def user_turn(i: int, words: int = 250) -> dict[str, Any]:
    return {
        "role": "user",
        "content": f"Turn {i}: " + " ".join(f"word{i}x{j}" for j in range(words)),
    }


def is_summary(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, str) and content.startswith(SUMMARY_MARKER_PREFIX)


@pytest.fixture
def summarizer() -> Iterator[OpenAIFake]:
    with OpenAIFake() as fake:
        yield fake


@pytest.fixture
def compacting_proxy(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> Iterator[str]:
    settings = proxy_settings(
        tmp_path,
        upstream,
        prepare_ahead_ratio="off",  # the summary is made on the crossing turn
        summarizer="openai",
        summarizer_base_url=f"{summarizer.base_url}/v1",
        summarizer_model="gpt-4o-mini",
        summarizer_api_key="sk-summarizer",
    )
    with live_service(settings) as url:
        yield url


def test_thirty_stateless_turns_cost_one_summarizer_call_per_compaction(
    compacting_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    # Each summary names its round, so the upstream's copies tell the calls apart.
    summarizer.script(*(Reply.ok(f"{DEFAULT_SUMMARY}\n- round {i}") for i in range(30)))
    client = openai_client(compacting_proxy)
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    compacted_turns = 0
    summaries_sent: list[str] = []
    for turn in range(30):
        history.append(user_turn(turn, 100))
        calls_before = len(summarizer.received)
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
        assert len(summarizer.received) - calls_before <= 1
        reply = raw.parse().choices[0].message
        history.append({"role": "assistant", "content": reply.content})
        sent = upstream.received[-1].body["messages"]
        if raw.headers["x-compactor-compacted"] == "true":
            compacted_turns += 1
            assert sent[0] == history[0]  # the system prompt stays first, untouched
            assert is_summary(sent[1])
            if sent[1]["content"] not in summaries_sent:
                summaries_sent.append(sent[1]["content"])
            assert sent[2:] == history[len(history) - len(sent) + 1 : -1]  # a verbatim tail
            assert int(raw.headers["x-compactor-tokens-after"]) <= THRESHOLD
            assert int(raw.headers["x-compactor-tokens-before"]) > THRESHOLD
        else:
            assert sent == history[:-1]
    calls = len(summarizer.received)
    # Every turn past the first compaction is sent compacted, but the summarizer is only
    # called when the compacted history itself outgrows the threshold again: one call
    # per distinct summary the upstream ever saw.
    assert compacted_turns >= 12
    assert calls == len(summaries_sent)
    assert 1 <= calls <= compacted_turns // 5
    metrics = httpx.get(f"{compacting_proxy}/metrics").text
    compactions = 'compactor_proxy_compactions_total{api="chat_completions",trigger="auto"}'
    assert f"{compactions} {calls}.0" in metrics
    # Only the first compaction missed the cache; every later turn started from a summary
    # (the later summarizer calls updated a cached one).
    cache = 'compactor_proxy_summary_cache_total{api="chat_completions",result='
    assert f'{cache}"miss"}} 1.0' in metrics
    assert f'{cache}"hit"}} {compacted_turns - 1}.0' in metrics


def test_under_the_threshold_the_bytes_are_forwarded_as_received(
    compacting_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    client = openai_client(compacting_proxy)
    history = [user_turn(i, 50) for i in range(5)]
    for _ in range(3):
        client.chat.completions.create(model=MODEL, messages=history)
    assert all(body["messages"] == history for body in upstream.bodies("/chat/completions"))
    assert summarizer.received == []


def test_max_tokens_raise_the_reserve(
    compacting_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    # claude-sonnet-4-5: window 200,000; a 60,000-token output budget lowers the threshold
    # to 140,000, under the ~155,000 tokens sent (the default threshold is 167,232).
    client = anthropic_client(compacting_proxy)
    history: list[dict[str, Any]] = []
    for i in range(80):
        history += [user_turn(i, 480), {"role": "assistant", "content": f"ok {i}"}]
    history.append({"role": "user", "content": "go on"})
    small = client.messages.with_raw_response.create(
        model="claude-sonnet-4-5",
        max_tokens=1000,
        system="Be brief.",
        messages=history,
    )
    assert small.headers["x-compactor-compacted"] == "false"
    with client.messages.stream(
        model="claude-sonnet-4-5",
        max_tokens=60_000,
        system="Be brief.",
        messages=history,
    ) as stream:
        assert stream.response.headers["x-compactor-compacted"] == "true"
        assert stream.get_final_text().startswith("Reply to")
    sent = upstream.bodies("/messages")[-1]
    assert sent["system"] == "Be brief." and sent["max_tokens"] == 60_000
    assert is_summary(sent["messages"][0]) and sent["messages"][-1] == history[-1]


def small_reserve_settings(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> Settings:
    """gpt-4o with a 40,000-token window and a 4,000-token reserve (COMPACTOR_CONFIG):
    threshold 34,000; inline compaction only."""
    return proxy_settings(
        tmp_path,
        upstream,
        prepare_ahead_ratio="off",
        summarizer="openai",
        summarizer_base_url=f"{summarizer.base_url}/v1",
        summarizer_model="gpt-4o-mini",
        summarizer_api_key="sk-summarizer",
        models={"gpt-4o": {"context_window": 40_000, "reserve_tokens": 4_000}},
    )


def small_reserve_history() -> list[dict[str, Any]]:
    """24 exchanges, between 10,000 and 34,000 tokens."""
    history: list[dict[str, Any]] = []
    for i in range(24):
        history += [user_turn(i, 200), {"role": "assistant", "content": f"ok {i}"}]
    return history


def test_the_models_configured_reserve_decides_the_proxys_threshold(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    """A 40,000-token window with a 4,000-token reserve (COMPACTOR_CONFIG): the threshold
    is 34,000, not the 7,232 of the default 32,768-token reserve the proxy once put in its
    place; a request's larger output budget still raises it."""
    settings = small_reserve_settings(tmp_path, upstream, summarizer)
    history = small_reserve_history()
    history.append({"role": "user", "content": "go on"})
    with live_service(settings) as url:
        client = openai_client(url)
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=history)
        before = int(raw.headers["x-compactor-tokens-before"])
        assert 7_232 < before < 34_000
        assert raw.headers["x-compactor-compacted"] == "false"
        assert summarizer.received == []
        # 30,000 tokens of output leave 10,000 of the window: this history is over that.
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o", messages=history, max_tokens=30_000
        )
        assert raw.headers["x-compactor-compacted"] == "true"
    assert upstream.bodies("/chat/completions")[0]["messages"] == history


def test_a_bound_requests_output_budget_raises_its_sessions_reserve(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    """Session-bound, as stateless: the session's reserve (the model's 4,000) is raised by
    the request's `max_tokens` — a context under the session's 34,000-token threshold that
    would leave no room for 30,000 tokens of output is compacted before it is forwarded."""
    settings = small_reserve_settings(tmp_path, upstream, summarizer)
    history = small_reserve_history()
    with live_service(settings) as url:
        created = httpx.post(f"{url}/sessions", json={"model": "gpt-4o"})
        assert created.status_code == 201, created.text
        client = openai_client(url, **{"X-Compactor-Session": created.json()["id"]})
        first = [*history, {"role": "user", "content": "go on"}]
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=first)
        assert 10_000 < int(raw.headers["x-compactor-tokens-before"]) < 34_000
        assert raw.headers["x-compactor-compacted"] == "false"
        first.append({"role": "assistant", "content": raw.parse().choices[0].message.content})
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o",
            messages=[*first, {"role": "user", "content": "and?"}],
            max_tokens=30_000,
        )
        assert raw.headers["x-compactor-compacted"] == "true"
    sent = upstream.bodies("/chat/completions")[-1]["messages"]
    assert is_summary(sent[0]) and sent[-1] == {"role": "user", "content": "and?"}


def test_overflow_is_compacted_once_and_retried_once(
    compacting_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    history: list[dict[str, Any]] = []
    for i in range(10):
        history += [user_turn(i), {"role": "assistant", "content": f"done {i}"}]
    history.append({"role": "user", "content": "and now?"})
    upstream.script(context_too_long_openai())
    raw = openai_client(compacting_proxy).chat.completions.with_raw_response.create(
        model="gpt-4o",
        messages=history,
    )
    assert raw.parse().choices[0].message.content
    first, retry = upstream.bodies("/chat/completions")
    assert first["messages"] == history
    assert is_summary(retry["messages"][0]) and retry["messages"][-1] == history[-1]
    assert raw.headers["x-compactor-compacted"] == "true"
    assert len(summarizer.received) == 1


def test_a_second_overflow_reaches_the_caller_as_the_upstreams_error(
    compacting_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    history: list[dict[str, Any]] = []
    for i in range(10):
        history += [user_turn(i), {"role": "assistant", "content": f"done {i}"}]
    upstream.script(context_too_long_anthropic(), context_too_long_anthropic())
    with pytest.raises(anthropic.BadRequestError) as caught:
        anthropic_client(compacting_proxy).messages.create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            messages=[*history, user_turn(99)],
        )
    assert "prompt is too long" in str(caught.value.body)
    assert len(upstream.bodies("/messages")) == 2  # retried once, never twice


def test_nothing_to_compact_gives_back_the_first_error(
    compacting_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    upstream.script(Answer(413, {"error": {"message": "request too large", "type": "too_big"}}))
    with pytest.raises(openai.APIStatusError) as caught:
        openai_client(compacting_proxy).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "one message only"}]
        )
    assert caught.value.status_code == 413
    assert len(upstream.bodies("/chat/completions")) == 1
    assert summarizer.received == []


def test_mode_off_forwards_even_a_long_history_untouched(
    compacting_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    history = [user_turn(i) for i in range(40)]
    client = openai_client(compacting_proxy, **{"X-Compactor-Mode": "off"})
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
    assert raw.headers["x-compactor-compacted"] == "false"
    assert upstream.bodies("/chat/completions")[-1]["messages"] == history
    assert summarizer.received == []


def test_a_compacted_body_resent_as_is_forwards_the_same_history(
    compacting_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    client = openai_client(compacting_proxy)
    history = [{"role": "system", "content": "You are terse."}]
    history += [user_turn(i) for i in range(40)]
    first = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
    assert first.headers["x-compactor-compacted"] == "true"
    calls = len(summarizer.received)
    again = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
    sent = upstream.bodies("/chat/completions")
    assert sent[-1] == sent[-2] and is_summary(sent[-1]["messages"][1])
    assert len(summarizer.received) == calls
    for name in ("x-compactor-compacted", "x-compactor-tokens-before", "x-compactor-tokens-after"):
        assert again.headers[name] == first.headers[name]
