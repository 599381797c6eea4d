"""Stateless proxied callers (SPEC §10): a prefix whose summary never shrinks the history
costs one summarizer call, not one per turn (the refusal is remembered in the summary
cache, tenant-scoped); a Responses `input` sent as plain text is one user message."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from tests.integration.fake_providers import DEFAULT_SUMMARY, OpenAIFake, Reply
from tests.integration.fake_upstreams import FakeUpstream
from tests.integration.live_server import live_service
from tests.integration.proxy.clients import openai_client
from tests.integration.proxy.conftest import proxy_settings

MODEL = "gpt-4"  # window 8,192: threshold 6,963, a kept tail of 1,740
THRESHOLD = 6_963
KEYS = "t1:key-aaaaaaaa,t2:key-bbbbbbbb"


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
        api_keys=KEYS,
        summarizer="openai",
        summarizer_base_url=f"{summarizer.base_url}/v1",
        summarizer_model="gpt-4o-mini",
        summarizer_api_key="sk-summarizer",
    )
    with live_service(settings) as url:
        yield url


def huge(words: int = 2_800) -> str:
    return "Paste: " + " ".join(f"line{j}" for j in range(words))


def test_an_ineffective_summary_is_not_paid_for_on_every_turn(
    compacting_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    # Only a short exchange lies before one huge message the kept tail must hold: its
    # summary (longer than the exchange) cannot shrink the history, turn after turn.
    long_summary = DEFAULT_SUMMARY + "\n" + " ".join(f"fact{j}" for j in range(300))
    summarizer.script(*(Reply.ok(long_summary) for _ in range(10)))
    client = openai_client(compacting_proxy, **{"X-Compactor-Key": "key-aaaaaaaa"})
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": huge()},
    ]
    for turn in range(5):
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
        assert int(raw.headers["x-compactor-tokens-before"]) > THRESHOLD
        assert raw.headers["x-compactor-compacted"] == "false"
        # Failing open: the history goes on as the caller sent it.
        assert upstream.bodies("/chat/completions")[-1]["messages"] == history
        history += [
            {"role": "assistant", "content": f"read it ({turn})"},
            {"role": "user", "content": f"and now {turn}?"},
        ]
    assert len(summarizer.received) == 1
    # The memory is the tenant's own: another tenant's first try pays its own call.
    other = openai_client(compacting_proxy, **{"X-Compactor-Key": "key-bbbbbbbb"})
    other.chat.completions.create(model=MODEL, messages=history)
    assert len(summarizer.received) == 2
    # Once the huge message leaves the kept tail, summarizing is tried again.
    history += [{"role": "user", "content": huge(600)} for _ in range(3)]
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
    assert len(summarizer.received) == 3


def test_a_summary_that_leaves_the_history_over_the_threshold_is_not_redone_every_turn(
    compacting_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    client = openai_client(compacting_proxy, **{"X-Compactor-Key": "key-aaaaaaaa"})
    history: list[dict[str, Any]] = []
    for i in range(6):
        history += [
            {"role": "user", "content": f"Step {i}: " + " ".join(f"w{i}x{j}" for j in range(150))},
            {"role": "assistant", "content": f"done {i}"},
        ]
    history.append({"role": "user", "content": huge()})
    for turn in range(4):
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
        assert raw.headers["x-compactor-compacted"] == "true"
        # The huge message alone keeps the compacted history over the threshold.
        assert int(raw.headers["x-compactor-tokens-after"]) > THRESHOLD
        sent = upstream.bodies("/chat/completions")[-1]["messages"]
        assert sent[0]["content"].startswith(SUMMARY_MARKER_PREFIX)
        history += [
            {"role": "assistant", "content": f"read it ({turn})"},
            {"role": "user", "content": f"and now {turn}?"},
        ]
    assert len(summarizer.received) == 1


def test_a_plain_text_responses_input_is_counted_and_forwarded_as_sent(
    compacting_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    client = openai_client(compacting_proxy, **{"X-Compactor-Key": "key-aaaaaaaa"})
    raw = client.responses.with_raw_response.create(model=MODEL, input="just a question")
    assert 0 < int(raw.headers["x-compactor-tokens-before"]) < 100
    assert upstream.bodies("/responses")[-1]["input"] == "just a question"
    raw = client.responses.with_raw_response.create(model=MODEL, input=huge())
    assert int(raw.headers["x-compactor-tokens-before"]) > THRESHOLD
    # One message: nothing lies before it to summarize, so it goes on unchanged.
    assert upstream.bodies("/responses")[-1]["input"] == huge()
    assert not str(upstream.bodies("/responses")[-1]["input"]).startswith(SUMMARY_MARKER_PREFIX)
    assert summarizer.received == []
