"""Vendor-native context management through the proxy (SPEC §11), driven by the official
SDKs: multi-turn loops where the client appends the returned compaction block or item the
way the vendors' docs show, checking what the fake upstream received each turn."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from app.engine.clearing import CLEARED_RESULT_PREFIX
from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from tests.conftest import CLAUDE_CODE, load_json
from tests.integration.fake_providers import OpenAIFake, Reply
from tests.integration.fake_upstreams import Answer, FakeUpstream
from tests.integration.live_server import live_service
from tests.integration.proxy.clients import anthropic_client, openai_client
from tests.integration.proxy.conftest import proxy_settings

AGENT = CLAUDE_CODE / "4d5611e5.agent-a2898e3.anthropic.json"  # 66 messages, ~54k tokens
RESPONSES = CLAUDE_CODE / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.responses.json"
MODEL = "claude-sonnet-4-5"
BETAS = ["compact-2026-01-12", "context-management-2025-06-27"]


def compact_at(tokens: int, **options: Any) -> dict[str, Any]:
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": tokens}}
    return {"edits": [{**edit, **options}]}


@pytest.fixture
def summarizer() -> Iterator[OpenAIFake]:
    with OpenAIFake() as fake:
        yield fake


def native_settings(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake, **overrides: Any
) -> Any:
    return proxy_settings(
        tmp_path,
        upstream,
        summarizer="openai",
        summarizer_base_url=f"{summarizer.base_url}/v1",
        summarizer_model="gpt-4o-mini",
        summarizer_api_key="sk-summarizer",
        state_key="a-state-key-for-tests",
        **overrides,
    )


@pytest.fixture
def proxy(tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake) -> Iterator[str]:
    with live_service(native_settings(tmp_path, upstream, summarizer)) as url:
        yield url


def history() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = copy.deepcopy(load_json(AGENT)["messages"])
    return messages


def is_summary(message: dict[str, Any]) -> bool:
    content = message["content"]
    text = content if isinstance(content, str) else content[0].get("text", "")
    return message["role"] == "user" and text.startswith(SUMMARY_MARKER_PREFIX)


def test_anthropic_compaction_loop(proxy: str, upstream: FakeUpstream) -> None:
    client = anthropic_client(proxy)
    messages = history()
    original = copy.deepcopy(messages)
    cm = compact_at(30_000)

    # Turn 1: over the trigger, so the service compacts before the model is called.
    raw = client.beta.messages.with_raw_response.create(
        model=MODEL, max_tokens=1000, messages=messages, context_management=cm, betas=BETAS
    )
    reply = raw.parse()
    assert raw.headers["x-compactor-compacted"] == "true"
    block = reply.content[0]
    assert block.type == "compaction" and block.content and block.encrypted_content
    assert reply.content[1].type == "text"
    iterations = reply.usage.iterations or []
    assert [i.type for i in iterations] == ["compaction", "message"]
    assert (iterations[0].input_tokens, iterations[0].output_tokens) == (1200, 300)
    # The top-level usage is the model call's own, as the upstream said; the message
    # iteration repeats it.
    assert reply.usage.input_tokens == iterations[1].input_tokens
    assert reply.usage.output_tokens == iterations[1].output_tokens
    sent = upstream.received[-1].body
    assert "context_management" not in sent and sent["max_tokens"] == 1000
    assert is_summary(sent["messages"][0])
    kept = sent["messages"][1:]
    assert kept == original[len(original) - len(kept) :]
    first_window = sent["messages"]

    # Turn 2: the client appends the reply as the docs show, and asks again.
    messages.append({"role": "assistant", "content": reply.content})
    messages.append({"role": "user", "content": "Now run the tests."})
    reply2 = client.beta.messages.create(
        model=MODEL, max_tokens=1000, messages=messages, context_management=cm, betas=BETAS
    )
    assert all(b.type != "compaction" for b in reply2.content)  # under the trigger now
    sent2 = upstream.received[-1].body["messages"]
    assert sent2[: len(first_window)] == first_window
    assert sent2[len(first_window) :] == [
        {"role": "assistant", "content": [{"type": "text", "text": reply.content[1].text}]},
        {"role": "user", "content": "Now run the tests."},
    ]

    # Turn 3: enough new material to cross the trigger again: a second compaction folds
    # the first summary in (the summary message is updated, not summarized as text).
    messages.append({"role": "assistant", "content": reply2.content})
    messages.append({"role": "user", "content": "Logs:\n" + "error line in module\n" * 6000})
    reply3 = client.beta.messages.create(
        model=MODEL, max_tokens=1000, messages=messages, context_management=cm, betas=BETAS
    )
    assert reply3.content[0].type == "compaction"
    sent3 = upstream.received[-1].body["messages"]
    assert is_summary(sent3[0]) and not any(is_summary(m) for m in sent3[1:])
    assert sent3[-1] == messages[-1]


def test_anthropic_compaction_streams_a_compaction_block(
    proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    client = anthropic_client(proxy)
    with client.beta.messages.stream(
        model=MODEL,
        max_tokens=1000,
        messages=history(),
        context_management=compact_at(30_000, instructions="Keep every file path."),
        betas=BETAS,
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert "compaction" in kinds  # the SDK's own event for a compaction_delta
    assert [b.type for b in final.content] == ["compaction", "text"]
    assert final.content[0].content and final.content[0].encrypted_content
    assert final.context_management is not None and final.context_management.applied_edits == []
    assert [i.type for i in final.usage.iterations or []] == ["compaction", "message"]
    assert is_summary(upstream.received[-1].body["messages"][0])
    assert upstream.received[-1].body["stream"] is True
    # The edit's instructions reach the summarizer.
    assert "Keep every file path." in str(summarizer.received[-1].body)


def test_pause_after_compaction_answers_without_calling_the_model(
    proxy: str, upstream: FakeUpstream
) -> None:
    client = anthropic_client(proxy)
    messages = history()
    cm = compact_at(30_000, pause_after_compaction=True)
    paused = client.beta.messages.create(
        model=MODEL, max_tokens=1000, messages=messages, context_management=cm, betas=BETAS
    )
    assert paused.stop_reason == "compaction"
    assert [b.type for b in paused.content] == ["compaction"]
    assert [i.type for i in paused.usage.iterations or []] == ["compaction"]
    assert upstream.received == []  # no model was called
    # The client sends the block back to continue: the model gets summary + kept tail.
    messages.append({"role": "assistant", "content": paused.content})
    client.beta.messages.create(
        model=MODEL, max_tokens=1000, messages=messages, context_management=cm, betas=BETAS
    )
    sent = upstream.received[-1].body["messages"]
    assert is_summary(sent[0]) and sent[-1] == messages[-2]

    with client.beta.messages.stream(
        model=MODEL, max_tokens=1000, messages=history(), context_management=cm, betas=BETAS
    ) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "compaction" and final.content[0].type == "compaction"
    assert len(upstream.received) == 1


def test_clearing_edits_are_applied_and_reported(proxy: str, upstream: FakeUpstream) -> None:
    client = anthropic_client(proxy)
    raw = client.beta.messages.with_raw_response.create(
        model=MODEL,
        max_tokens=1000,
        messages=history(),
        context_management={
            "edits": [
                {"type": "clear_thinking_20251015", "keep": "all"},
                {
                    "type": "clear_tool_uses_20250919",
                    "trigger": {"type": "input_tokens", "value": 20_000},
                    "keep": {"type": "tool_uses", "value": 3},
                    "exclude_tools": ["Edit"],
                },
            ]
        },
        betas=BETAS,
    )
    reply = raw.parse()
    assert reply.context_management is not None
    (applied,) = reply.context_management.applied_edits
    assert applied.type == "clear_tool_uses_20250919" and applied.cleared_tool_uses > 0
    before = int(raw.headers["x-compactor-tokens-before"])
    after = int(raw.headers["x-compactor-tokens-after"])
    assert before - after == applied.cleared_input_tokens
    results = [
        str(b.get("content"))
        for m in upstream.received[-1].body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert sum(CLEARED_RESULT_PREFIX in r for r in results) == applied.cleared_tool_uses
    assert reply.content[0].type == "text"  # no compaction block without a compact edit


def test_unknown_edits_and_tampered_blocks_are_refused_before_the_upstream(
    proxy: str, upstream: FakeUpstream
) -> None:
    client = anthropic_client(proxy)
    with pytest.raises(anthropic.BadRequestError, match="clear_everything"):
        client.beta.messages.create(
            model=MODEL,
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            context_management={"edits": [{"type": "clear_everything_20990101"}]},  # type: ignore[list-item]
        )
    forged = {"type": "compaction", "content": "x", "encrypted_content": "ccs1.e30.AAAA"}
    with pytest.raises(anthropic.BadRequestError, match="signature"):
        client.beta.messages.create(
            model=MODEL,
            max_tokens=10,
            messages=[
                {"role": "assistant", "content": [forged]},  # type: ignore[list-item]
                {"role": "user", "content": "go on"},
            ],
        )
    assert upstream.received == []


def test_forward_mode_gives_the_upstream_the_request_unchanged(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    settings = native_settings(tmp_path, upstream, summarizer, native_edits="forward")
    with live_service(settings) as url:
        cm = compact_at(30_000)
        messages = history()
        reply = anthropic_client(url).beta.messages.create(
            model=MODEL, max_tokens=1000, messages=messages, context_management=cm, betas=BETAS
        )
        assert reply.content[0].type == "text"
        sent = upstream.received[-1]
        assert sent.body["context_management"] == cm and sent.body["messages"] == messages
        assert "compact-2026-01-12" in sent.headers["anthropic-beta"]

        # The upstream's own compaction items are its to read: compact and count go there.
        native_item = {"id": "cmp_up", "type": "compaction", "encrypted_content": "gAAAA-up"}
        upstream.script(
            Answer(
                json={
                    "id": "resp_c",
                    "object": "response.compaction",
                    "created_at": 1,
                    "output": [native_item],
                    "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
                }
            ),
            Answer(json={"object": "response.input_tokens", "input_tokens": 42}),
        )
        client = openai_client(url)
        compacted = client.responses.compact(model="gpt-5", input="hi")
        assert compacted.output[0].id == "cmp_up"
        assert upstream.received[-1].path == "/v1/responses/compact"
        counted = client.responses.input_tokens.count(model="gpt-5", input=[native_item])
        assert counted.input_tokens == 42
        assert upstream.received[-1].path == "/v1/responses/input_tokens"
        assert upstream.received[-1].body == {"model": "gpt-5", "input": [native_item]}
    assert summarizer.received == []


def test_responses_compaction_loop(proxy: str, upstream: FakeUpstream) -> None:
    client = openai_client(proxy)
    transcript = load_json(RESPONSES)
    items = copy.deepcopy(transcript["input"])
    cm = [{"type": "compaction", "compact_threshold": 40_000}]
    response = client.responses.create(model="gpt-5", input=items, context_management=cm)
    item = response.output[0]
    assert item.type == "compaction" and item.encrypted_content.startswith("ccs1.")
    assert response.output_text.startswith("Reply to")
    sent = upstream.received[-1].body
    assert "context_management" not in sent
    first_window = sent["input"]
    assert first_window[0]["role"] == "user"
    assert first_window[0]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert first_window[1:] == items[len(items) - len(first_window) + 1 :]

    # Next turn: the output goes into the input, then the new message (vendor docs).
    items += [o.to_dict() for o in response.output]
    items.append({"role": "user", "content": "Next step?"})
    response2 = client.responses.create(model="gpt-5", input=items, context_management=cm)
    assert all(o.type != "compaction" for o in response2.output)
    sent2 = upstream.received[-1].body["input"]
    assert sent2[: len(first_window)] == first_window
    assert sent2[len(first_window) :] == items[-2:]

    # Streaming: the item is announced first and is in the final response.
    with client.responses.stream(
        model="gpt-5", input=transcript["input"], context_management=cm
    ) as stream:
        final = stream.get_final_response()
    assert final.output[0].type == "compaction" and final.output[1].type == "message"


def test_responses_refuse_server_side_history_and_foreign_items(
    proxy: str, upstream: FakeUpstream
) -> None:
    client = openai_client(proxy)
    cm = [{"type": "compaction", "compact_threshold": 1000}]
    with pytest.raises(openai.BadRequestError, match="X-Compactor-Session"):
        client.responses.create(
            model="gpt-5", input="hi", previous_response_id="resp_1", context_management=cm
        )
    with pytest.raises(openai.BadRequestError, match="compaction state"):
        client.responses.create(
            model="gpt-5",
            input=[
                # Another deployment's (or an altered) state; OpenAI's own is kept verbatim.
                {
                    "type": "compaction",
                    "encrypted_content": "ccs1.eJyrVkrOzy0oSi0uTk1RslIqSy0qzszPUzJU.x",
                },
                {"role": "user", "content": "hi"},
            ],
        )
    with pytest.raises(openai.BadRequestError, match="unknown context management type"):
        client.responses.create(model="gpt-5", input="hi", context_management=[{"type": "x"}])
    assert upstream.received == []


def test_a_failed_compaction_is_a_null_block_and_the_context_goes_unchanged(
    proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    summarizer.script(Reply.status_only(400, {"error": {"message": "no"}}))
    messages = history()
    reply = anthropic_client(proxy).beta.messages.create(
        model=MODEL,
        max_tokens=1000,
        messages=messages,
        context_management=compact_at(30_000),
        betas=BETAS,
    )
    block = reply.content[0]
    assert block.type == "compaction" and block.content is None
    assert reply.content[1].type == "text"
    assert upstream.received[-1].body["messages"] == messages


def test_a_block_sent_back_without_context_management_is_still_honoured(
    proxy: str, upstream: FakeUpstream
) -> None:
    client = anthropic_client(proxy)
    messages = history()
    reply = client.beta.messages.create(
        model=MODEL,
        max_tokens=1000,
        messages=messages,
        context_management=compact_at(30_000),
        betas=BETAS,
    )
    window = upstream.received[-1].body["messages"]
    messages += [
        {"role": "assistant", "content": reply.content},
        {"role": "user", "content": "thanks"},
    ]
    plain = client.messages.create(model=MODEL, max_tokens=1000, messages=messages)  # type: ignore[arg-type]
    sent = upstream.received[-1].body
    assert sent["messages"][: len(window)] == window and sent["messages"][-1] == messages[-1]
    assert all(
        b["type"] != "compaction"
        for m in sent["messages"]
        for b in m["content"]
        if isinstance(b, dict)
    )
    assert plain.content[0].type == "text"


def test_a_bound_session_records_the_originals_not_the_edited_copy(
    proxy: str, upstream: FakeUpstream
) -> None:
    # Found by review: the natively cleared body was what the session's transcript kept.
    created = httpx.post(f"{proxy}/sessions", json={"model": MODEL})
    sid = created.json()["id"]
    client = anthropic_client(proxy, **{"X-Compactor-Session": sid})
    sent = history()
    client.beta.messages.create(
        model=MODEL,
        max_tokens=1000,
        messages=sent,
        context_management={
            "edits": [
                {
                    "type": "clear_tool_uses_20250919",
                    "trigger": {"type": "input_tokens", "value": 1_000},
                    "keep": {"type": "tool_uses", "value": 1},
                }
            ]
        },
        betas=BETAS,
    )
    stored = httpx.get(f"{proxy}/sessions/{sid}/transcript", params={"limit": 5000}).json()
    assert stored["messages"][: len(sent)] == sent
    assert CLEARED_RESULT_PREFIX not in str(stored["messages"])
