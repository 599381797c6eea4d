"""A Responses `compaction` item at the front of a history (SPEC §5.1): the service's own
signed item is read, its summary updated rather than summarized as conversation; a vendor's
opaque item (OpenAI's encrypted state) is kept verbatim in front and what follows it is
compacted. Through `POST /compact` and through the proxy's `/v1/responses`, with the
official `openai` SDK where the proxy is involved."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.settings import Settings
from tests.integration.fake_providers import DEFAULT_SUMMARY, OpenAIFake, Reply
from tests.integration.fake_upstreams import FakeUpstream
from tests.integration.proxy.clients import close_clients, openai_client
from tests.live_server import live_server

MODEL = "gpt-4"  # an 8,192-token window: threshold 6,963
OPAQUE = {
    "id": "cmp_0123",
    "type": "compaction",
    "encrypted_content": "gAAAAABpZ-openai-encrypted-state-the-service-cannot-read",
}
FIRST_SUMMARY = f"{DEFAULT_SUMMARY}\n- FIRST-SUMMARY-FACT"


def turns(start: int, count: int, words: int = 250) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for i in range(start, start + count):
        text = f"Turn {i}: " + " ".join(f"word{i}x{j}" for j in range(words))
        items.append({"type": "message", "role": "user", "content": text})
        items.append({"type": "message", "role": "assistant", "content": f"Noted turn {i}."})
    return items


@pytest.fixture
def summarizer() -> Iterator[OpenAIFake]:
    with OpenAIFake() as fake:
        yield fake


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as fake:
        yield fake


@pytest.fixture
def service(tmp_path: Path, summarizer: OpenAIFake, upstream: FakeUpstream) -> Iterator[str]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'c.db'}",
        upstream_openai_url=f"{upstream.base_url}/v1",
        summarizer="openai",
        summarizer_base_url=f"{summarizer.base_url}/v1",
        summarizer_model="gpt-4o-mini",
        summarizer_api_key="sk-summarizer",
        state_key="a-state-key-for-tests",
    )
    with live_server(settings) as url:
        yield url
    close_clients()


def prompt_of(summarizer: OpenAIFake, index: int = -1) -> str:
    """What the summarizer was asked: its user turn (the system prompt is the fixed
    instructions, which name the tags themselves)."""
    messages = summarizer.received[index].body["messages"]
    return json.dumps(messages[1:])


def compact(service: str, messages: list[Any], **fields: Any) -> dict[str, Any]:
    answer = httpx.post(
        f"{service}/compact",
        json={
            "format": "responses",
            "model": MODEL,
            "messages": messages,
            "keep_recent_tokens": 1_000,
            **fields,
        },
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def own_item(service: str, summarizer: OpenAIFake) -> dict[str, Any]:
    """A compaction item the service wrote, from its standalone compaction."""
    summarizer.script(Reply.ok(FIRST_SUMMARY))
    # Over the default keep_recent_tokens (20,000), so there is something to summarize.
    compacted = openai_client(service).responses.compact(model=MODEL, input=turns(0, 30))
    item = compacted.output[-1].to_dict()
    assert item["type"] == "compaction" and item["encrypted_content"].startswith("ccs1.")
    assert "FIRST-SUMMARY-FACT" not in prompt_of(summarizer)
    return item


def test_compact_updates_the_summary_inside_the_services_own_item(
    service: str, summarizer: OpenAIFake
) -> None:
    item = own_item(service, summarizer)
    calls = len(summarizer.received)
    system = {"type": "message", "role": "system", "content": "You are terse."}
    result = compact(service, [system, item, *turns(10, 8)], force=True)
    assert result["compacted"] is True
    assert len(summarizer.received) == calls + 1
    prompt = prompt_of(summarizer)
    # The update path: the item's summary is the previous summary, not conversation.
    assert "<previous-summary>" in prompt and "FIRST-SUMMARY-FACT" in prompt
    assert "ccs1." not in prompt
    messages = result["messages"]
    assert messages[0] == system
    assert messages[1]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert messages[-1] == turns(10, 8)[-1]


def test_compact_keeps_a_vendors_opaque_item_in_front_and_compacts_what_follows(
    service: str, summarizer: OpenAIFake
) -> None:
    system = {"type": "message", "role": "developer", "content": "You are terse."}
    history = [system, OPAQUE, *turns(0, 8)]
    estimate = httpx.post(
        f"{service}/estimate", json={"format": "responses", "model": MODEL, "messages": history}
    ).json()
    result = compact(service, history, force=True)
    assert result["compacted"] is True
    messages = result["messages"]
    # Never dropped, never summarized: verbatim, right after the system prompt.
    assert messages[0] == system and messages[1] == OPAQUE
    assert messages[2]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert messages[-1] == history[-1]
    prompt = prompt_of(summarizer)
    assert OPAQUE["encrypted_content"] not in prompt
    assert "<previous-summary>" not in prompt  # nothing readable to update
    assert "Turn 0:" in prompt  # what followed the item was summarized
    # Counted like a system prefix: never in the keep-recent budget.
    assert estimate["breakdown"]["system"] > 0


def test_the_proxy_compacts_after_a_vendors_opaque_item(
    service: str, summarizer: OpenAIFake, upstream: FakeUpstream
) -> None:
    client = openai_client(service)
    items = [OPAQUE, *turns(0, 12)]
    raw = client.responses.with_raw_response.create(model=MODEL, input=items)  # type: ignore[arg-type]
    assert raw.status_code == 200 and raw.headers["x-compactor-compacted"] == "true"
    sent = upstream.bodies("/responses")[-1]["input"]
    assert sent[0] == OPAQUE
    assert sent[1]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert sent[-1] == items[-1]
    assert OPAQUE["encrypted_content"] not in prompt_of(summarizer)

    # With the caller asking for the vendor's context management (SPEC §11), an item the
    # service did not write is refused: it cannot stand in for what only OpenAI can read.
    cm = [{"type": "compaction", "compact_threshold": 5_000}]
    with pytest.raises(openai.BadRequestError, match="did not write"):
        client.responses.create(model=MODEL, input=items, context_management=cm)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="did not write"):
        client.responses.input_tokens.count(model=MODEL, input=items)  # type: ignore[arg-type]


def test_the_proxy_updates_the_summary_of_the_services_own_item(
    service: str, summarizer: OpenAIFake, upstream: FakeUpstream
) -> None:
    item = own_item(service, summarizer)
    calls = len(summarizer.received)
    client = openai_client(service)
    items = [item, *turns(10, 12)]
    raw = client.responses.with_raw_response.create(model=MODEL, input=items)  # type: ignore[arg-type]
    assert raw.headers["x-compactor-compacted"] == "true"
    assert len(summarizer.received) == calls + 1
    prompt = prompt_of(summarizer)
    assert "<previous-summary>" in prompt and "FIRST-SUMMARY-FACT" in prompt
    sent = upstream.bodies("/responses")[-1]["input"]
    assert sent[0]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert all(i.get("type") != "compaction" for i in sent)


def test_a_tampered_own_item_is_still_refused(service: str, summarizer: OpenAIFake) -> None:
    item = own_item(service, summarizer)
    token = item["encrypted_content"]
    tampered = {
        **item,
        "encrypted_content": token[:-4] + ("AAAA" if token[-4:] != "AAAA" else "BBBB"),
    }
    answer = httpx.post(
        f"{service}/compact",
        json={"format": "responses", "model": MODEL, "messages": [tampered, *turns(0, 4)]},
    )
    assert answer.status_code == 400
    assert "signature" in answer.json()["detail"]
