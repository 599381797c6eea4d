"""What a session-bound proxied request forwards, and what it is counted as: the session's
context stands for upstream-stored history (`previous_response_id` / `conversation` are
not forwarded next to it), and the system prompt and tools the request forwards are the
ones counted (SPEC §10, §11)."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from tests.integration.fake_upstreams import FakeUpstream
from tests.integration.proxy.clients import anthropic_client, openai_client


def new_session(proxy_url: str, **fields: Any) -> str:
    answer = httpx.post(f"{proxy_url}/sessions", json=fields)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def words(tag: str, count: int) -> str:
    return " ".join(f"{tag}{j}" for j in range(count))


def test_a_bound_responses_request_does_not_forward_server_side_history(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    sid = new_session(proxy_url, model="gpt-5", format="responses")
    client = openai_client(proxy_url, **{"X-Compactor-Session": sid})
    client.responses.create(model="gpt-5", input="first question", store=True)
    client.responses.create(
        model="gpt-5",
        input=[{"role": "user", "content": "second question"}],
        previous_response_id="resp_up",
        store=False,
    )
    client.responses.create(
        model="gpt-5",
        input="third question",
        conversation="conv_123",
        context_management=[{"type": "compaction", "compact_threshold": 100_000}],
    )
    first, second, third = upstream.bodies("/responses")
    assert first["store"] is True
    # The session's context is the history: naming the upstream's copy would double it.
    assert "previous_response_id" not in second and "conversation" not in third
    assert second["store"] is False  # what the caller sent about storage stays as sent
    assert [i.get("content") for i in second["input"] if i.get("role") == "user"] == [
        "first question",
        "second question",
    ]
    assert third["input"][-1] == {"role": "user", "content": "third question"}


def test_an_unbound_managed_request_with_server_side_history_is_refused(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    client = openai_client(proxy_url)
    cm = [{"type": "compaction", "compact_threshold": 1000}]
    with pytest.raises(openai.BadRequestError, match="conversation"):
        client.responses.create(
            model="gpt-5", input="hi", conversation="c_1", context_management=cm
        )
    assert upstream.received == []


def test_a_bound_request_is_counted_with_the_instructions_it_forwards(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    # The session stores no system prompt; the request's instructions alone push the
    # context over the trigger, and they are what the upstream receives.
    sid = new_session(
        proxy_url, model="gpt-4", format="responses", trigger_tokens=3_000, keep_recent_tokens=400
    )
    client = openai_client(proxy_url, **{"X-Compactor-Session": sid})
    instructions = "Follow these rules: " + words("rule", 1_200)
    history: list[dict[str, Any]] = []
    for i in range(4):
        history.append({"role": "user", "content": f"Step {i}: " + words(f"s{i}x", 120)})
        history.append({"role": "assistant", "content": f"Done with step {i}."})
    history.append({"role": "user", "content": "next"})
    raw = client.responses.with_raw_response.create(
        model="gpt-4", input=history, instructions=instructions
    )
    assert int(raw.headers["x-compactor-tokens-before"]) > 3_000
    assert raw.headers["x-compactor-compacted"] == "true"
    sent = upstream.bodies("/responses")[-1]
    assert sent["instructions"] == instructions
    assert sent["input"][0]["content"].startswith(SUMMARY_MARKER_PREFIX)


def test_a_bound_anthropic_request_is_counted_with_its_own_tools(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    # Two fresh sessions (no usage report to anchor on), the same message in each.
    plain_client = anthropic_client(
        proxy_url, **{"X-Compactor-Session": new_session(proxy_url, model="claude-sonnet-4-5")}
    )
    client = anthropic_client(
        proxy_url, **{"X-Compactor-Session": new_session(proxy_url, model="claude-sonnet-4-5")}
    )
    messages = [{"role": "user", "content": "hello"}]
    plain = plain_client.messages.with_raw_response.create(
        model="claude-sonnet-4-5",
        max_tokens=50,
        messages=messages,  # type: ignore[arg-type]
    )
    tool = {
        "name": "search",
        "description": words("describe", 400),
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    with_tools = client.messages.with_raw_response.create(
        model="claude-sonnet-4-5",
        max_tokens=50,
        system="Be brief. " + words("sys", 200),
        tools=[tool],  # type: ignore[list-item]
        messages=messages,  # type: ignore[arg-type]
    )
    before = int(plain.headers["x-compactor-tokens-before"])
    after = int(with_tools.headers["x-compactor-tokens-before"])
    # ~400 words of tool description and ~200 of system prompt are counted now.
    assert after - before > 500
    assert upstream.bodies("/v1/messages")[-1]["tools"] == [tool]
