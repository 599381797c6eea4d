"""One structured log line per compaction and per overflow retry (SPEC §18): what was
compacted, the numbers behind the decision, how long it took, whether the summary cache
answered, and the request id of the request it happened in."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.request_context import RequestIdFilter
from app.services.estimation import CountedHistory
from tests.integration.fake_upstreams import FakeUpstream, context_too_long_openai
from tests.integration.live_server import live_service
from tests.integration.proxy.clients import openai_client
from tests.integration.proxy.conftest import proxy_settings

MODEL = "gpt-4"  # an 8,192-token window: threshold 6,963


def turns(count: int, words: int = 250) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Turn {i}: " + " ".join(f"w{i}x{j}" for j in range(words)),
        }
        for i in range(count)
    ]


@pytest.fixture
def lines(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO)
    caplog.handler.addFilter(RequestIdFilter())
    return caplog


def events(caplog: pytest.LogCaptureFixture, event: str) -> list[dict[str, Any]]:
    return [vars(r) for r in caplog.records if r.name == "compactor.compaction" and r.msg == event]


def test_a_proxy_compaction_and_its_cache_hit_are_one_line_each(
    tmp_path: Path, upstream: FakeUpstream, lines: pytest.LogCaptureFixture
) -> None:
    with live_service(proxy_settings(tmp_path, upstream)) as url:
        client = openai_client(url)
        history = turns(40)
        first = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
        assert first.headers["x-compactor-compacted"] == "true"
        history = [*history, {"role": "user", "content": "one more"}]
        second = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)

    compacted, cached = events(lines, "compaction")
    assert compacted["request_id"] == first.headers["x-request-id"]
    assert compacted["api"] == "chat_completions" and compacted["tenant"] == "default"
    assert compacted["tokens_before"] == int(first.headers["x-compactor-tokens-before"])
    assert compacted["tokens_after"] == int(first.headers["x-compactor-tokens-after"])
    assert compacted["threshold"] == 6_963 and compacted["context_window"] == 8_192
    assert compacted["window_source"] in ("known", "registry")
    # The registry entry the name resolved to: gpt-4 is the snapshot whose counting rule applies.
    assert compacted["model"] == "gpt-4-0613" and compacted["trigger"] == "auto"
    assert compacted["strategy"] == "summarize" and compacted["applied"] == ["summarize"]
    assert compacted["summarizer"].startswith("extractive")
    assert compacted["summarized_messages"] > 0 and compacted["duration_ms"] >= 0
    assert compacted["cached"] is False and compacted["prepared_ahead"] is False

    assert cached["request_id"] == second.headers["x-request-id"]
    assert cached["cached"] is True
    assert cached["tokens_after"] == int(second.headers["x-compactor-tokens-after"])
    assert cached["summarized_messages"] == compacted["summarized_messages"]
    # Never message content.
    text = repr([compacted, cached])
    assert "w0x1" not in text and "one more" not in text


def test_a_session_compaction_names_the_session(
    tmp_path: Path, upstream: FakeUpstream, lines: pytest.LogCaptureFixture
) -> None:
    with live_service(proxy_settings(tmp_path, upstream)) as url:
        sid = httpx.post(f"{url}/sessions", json={"model": MODEL}).json()["id"]
        added = httpx.post(f"{url}/sessions/{sid}/messages", json={"messages": turns(40)})
        added.raise_for_status()
        answer = httpx.post(f"{url}/sessions/{sid}/compact", json={}, timeout=60)
        assert answer.status_code == 200, answer.text
    (line,) = events(lines, "compaction")
    assert line["session_id"] == sid and line["trigger"] == "manual"
    assert line["request_id"] == answer.headers["x-request-id"]
    assert line["tokens_after"] < line["tokens_before"]


def test_an_overflow_retry_is_one_line(
    tmp_path: Path, upstream: FakeUpstream, lines: pytest.LogCaptureFixture
) -> None:
    upstream.script(context_too_long_openai())
    with live_service(proxy_settings(tmp_path, upstream)) as url:
        raw = openai_client(url).chat.completions.with_raw_response.create(
            model=MODEL,
            messages=turns(12, words=60),  # under the threshold: sent as it is
        )
    (retry,) = events(lines, "overflow_retry")
    assert retry["outcome"] == "retried" and retry["upstream_status"] == 400
    assert retry["api"] == "chat_completions"
    assert retry["request_id"] == raw.headers["x-request-id"]
    assert retry["tokens_after"] < retry["tokens_before"]
    (compaction,) = events(lines, "compaction")
    assert compaction["trigger"] == "overflow"


@pytest.mark.skipif(
    not hasattr(CountedHistory, "model_known"),
    reason="MODEL-KNOWN HEADER NOT TESTED: this estimation has no model_known yet "
    "(it comes with the ops-config merge)",
)
def test_proxy_answers_say_whether_the_model_was_known(
    tmp_path: Path, upstream: FakeUpstream, lines: pytest.LogCaptureFixture
) -> None:
    with live_service(proxy_settings(tmp_path, upstream)) as url:
        client = openai_client(url)
        known = client.chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}]
        )
        unknown = client.chat.completions.with_raw_response.create(
            model="my-gateway-alias-xyz", messages=[{"role": "user", "content": "hi"}]
        )
    assert known.headers["x-compactor-model-known"] == "true"
    assert known.headers["x-compactor-context-window-source"] == "registry"
    assert unknown.headers["x-compactor-model-known"] == "false"
    assert unknown.headers["x-compactor-context-window-source"] == "fallback"
