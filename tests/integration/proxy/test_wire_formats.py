"""What the upstream receives after the proxy compacted a real tool-using transcript:
Responses `function_call`/`function_call_output` pairs (by call_id) and Anthropic
tool_use/tool_result pairs never split, `reasoning` items kept with what follows, the kept
tail and every unknown item and field byte-for-byte in meaning as the caller sent them."""

from __future__ import annotations

from typing import Any

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from tests.conftest import BIG_ANTHROPIC, CLAUDE_CODE, load_json, tool_pairs_intact
from tests.integration.fake_upstreams import FakeUpstream
from tests.integration.proxy.clients import anthropic_client, openai_client
from tests.integration.test_responses_format import pairs_intact

BIG_RESPONSES = CLAUDE_CODE / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.responses.json"


def kept_tail_start(original: list[Any], sent: list[Any]) -> int:
    """Index in `original` of the first kept item (sent = [summary, *original[cut:]])."""
    cut = len(original) - (len(sent) - 1)
    assert sent[1:] == original[cut:]
    return cut


def test_a_real_responses_transcript_compacts_without_splitting_anything(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    items = load_json(BIG_RESPONSES)["input"]
    client = openai_client(proxy_url)
    # gpt-4's 8,192-token window puts the ~140,000-token transcript far over the threshold.
    raw = client.responses.with_raw_response.create(
        model="gpt-4", input=items, instructions="You are a coding agent.", store=False
    )
    assert raw.headers["x-compactor-compacted"] == "true"
    sent = upstream.bodies("/responses")[-1]
    assert sent["instructions"] == "You are a coding agent." and sent["store"] is False
    forwarded = sent["input"]
    assert forwarded[0]["type"] == "message" and forwarded[0]["role"] == "user"
    assert forwarded[0]["content"].startswith(SUMMARY_MARKER_PREFIX)
    cut = kept_tail_start(items, forwarded)
    assert pairs_intact(forwarded)
    assert items[cut - 1]["type"] != "reasoning"  # no reasoning left behind its call
    assert int(raw.headers["x-compactor-tokens-after"]) < int(
        raw.headers["x-compactor-tokens-before"]
    )


def test_unknown_items_and_fields_round_trip(proxy_url: str, upstream: FakeUpstream) -> None:
    filler = " ".join(f"token{i}" for i in range(3_000))
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "developer", "content": "Follow the repo rules."},
        {"role": "user", "content": f"Patch the parser. {filler}", "x_vendor": {"n": 1}},
        {"kind_of_thing": "vendor extension", "payload": {"x": [1, 2, 3]}},
        {"type": "function_call", "call_id": "c1", "name": "run", "arguments": "{}", "id": "fc1"},
        {"type": "function_call_output", "call_id": "c1", "output": filler, "status": "done"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA" * 40},
        {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** x"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"q": "x"}},
        {"type": "item_reference", "id": "msg_earlier"},
        {
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done.", "annotations": [{"a": 1}]}],
        },
        {"role": "user", "content": "Thanks, now the tests.", "extra_field": [None, True]},
    ]
    client = openai_client(proxy_url)
    client.responses.create(model="gpt-5", input=items)  # under the threshold: untouched
    assert upstream.bodies("/responses")[-1]["input"] == items
    client.responses.create(model="gpt-4", input=items)  # over it: compacted
    forwarded = upstream.bodies("/responses")[-1]["input"]
    assert forwarded[0] == items[0]  # the developer message is the system prompt
    assert forwarded[1]["content"].startswith(SUMMARY_MARKER_PREFIX)
    cut = len(items) - (len(forwarded) - 2)
    assert forwarded[2:] == items[cut:]
    assert pairs_intact(forwarded)
    assert items[cut - 1].get("type") != "reasoning"


def test_a_real_anthropic_transcript_keeps_tool_pairs_and_system(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    body = load_json(BIG_ANTHROPIC)
    messages = body["messages"]
    system = body.get("system") or [{"type": "text", "text": "You are Claude Code."}]
    tools = body.get("tools") or []
    client = anthropic_client(proxy_url)
    # ~141,000 tokens: over claude-sonnet-4-5's threshold once 64,000 output tokens are
    # reserved (136,000), though under the default one (167,232).
    with client.messages.stream(
        model="claude-sonnet-4-5", max_tokens=64_000, system=system, tools=tools, messages=messages
    ) as stream:
        stream.get_final_message()
        assert stream.response.headers["x-compactor-compacted"] == "true"
    sent = upstream.bodies("/messages")[-1]
    assert sent["system"] == system and sent.get("tools", []) == tools
    forwarded = sent["messages"]
    assert forwarded[0]["content"].startswith(SUMMARY_MARKER_PREFIX)
    kept_tail_start(messages, forwarded)
    assert tool_pairs_intact(forwarded)
