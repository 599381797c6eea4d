"""OpenAI's `compaction_trigger` input item through the proxy, driven by the `openai`
SDK: last in `input` it compacts now and answers the compaction item alone (no model
called); sent back, the item stands for the compacted history; anywhere else it is a 400.
Whole, streamed, and with a bound session."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from tests.conftest import load_json
from tests.integration.fake_providers import DEFAULT_SUMMARY, OpenAIFake, Reply
from tests.integration.fake_upstreams import FakeUpstream
from tests.integration.live_server import live_service
from tests.integration.proxy.clients import openai_client
from tests.integration.proxy.test_native_context import RESPONSES, native_settings

TRIGGER = {"type": "compaction_trigger"}


@pytest.fixture
def summarizer() -> Iterator[OpenAIFake]:
    with OpenAIFake() as fake:
        yield fake


@pytest.fixture
def proxy(tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake) -> Iterator[str]:
    with live_service(native_settings(tmp_path, upstream, summarizer)) as url:
        yield url


def items() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = copy.deepcopy(load_json(RESPONSES)["input"])
    return loaded


def test_a_trigger_compacts_now_and_answers_the_item(
    proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    summarizer.script(Reply.ok(DEFAULT_SUMMARY))
    client = openai_client(proxy)
    history = items()
    response = client.responses.create(model="gpt-5", input=[*history, TRIGGER])  # type: ignore[list-item]
    assert [o.type for o in response.output] == ["compaction"]
    item = response.output[0]
    assert item.encrypted_content.startswith("ccs1.")  # type: ignore[union-attr]
    assert upstream.received == [] and len(summarizer.received) == 1

    follow = client.responses.create(
        model="gpt-5",
        input=[item.to_dict(), {"role": "user", "content": "Next step?"}],  # type: ignore[list-item]
    )
    assert follow.output_text.startswith("Reply to")
    sent = upstream.received[-1].body["input"]
    assert sent[0]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert sent[-1] == {"role": "user", "content": "Next step?"}
    # What the summary does not stand for is the history's verbatim tail.
    assert sent[1:-1] == history[len(history) - len(sent) + 2 :]


def test_a_streamed_trigger(proxy: str, summarizer: OpenAIFake) -> None:
    summarizer.script(Reply.ok(DEFAULT_SUMMARY))
    client = openai_client(proxy)
    with client.responses.stream(model="gpt-5", input=[*items(), TRIGGER]) as stream:  # type: ignore[list-item]
        final = stream.get_final_response()
    assert [o.type for o in final.output] == ["compaction"]


def test_a_trigger_that_is_not_last_is_refused(proxy: str, upstream: FakeUpstream) -> None:
    client = openai_client(proxy)
    with pytest.raises(openai.BadRequestError, match="last item of input"):
        client.responses.create(
            model="gpt-5",
            input=[TRIGGER, {"role": "user", "content": "hi"}],  # type: ignore[list-item]
        )
    assert upstream.received == []


def test_a_bound_session_is_compacted_by_the_trigger(
    proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    summarizer.script(Reply.ok(DEFAULT_SUMMARY))
    session = httpx.post(f"{proxy}/sessions", json={"model": "gpt-5", "format": "responses"})
    sid = session.json()["id"]
    history = items()
    appended = httpx.post(f"{proxy}/sessions/{sid}/messages", json={"messages": history})
    assert appended.status_code in (200, 201), appended.text
    client = openai_client(proxy, **{"X-Compactor-Session": sid})
    response = client.responses.create(model="gpt-5", input=[TRIGGER])  # type: ignore[list-item]
    assert [o.type for o in response.output] == ["compaction"]
    assert upstream.received == []
    context = httpx.get(f"{proxy}/sessions/{sid}/context").json()["messages"]
    assert context[0]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert len(context) < len(history)
    records = httpx.get(f"{proxy}/sessions/{sid}/compactions").json()
    assert len(records["compactions"]) == 1
