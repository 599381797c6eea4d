"""Native context management on the real transcripts, through the services the routes use:
what the upstream would receive each turn while a client round-trips the compaction
block/item the way the vendors' docs show."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

from app.api.state import AppState
from app.engine.clearing import CLEARED_RESULT_PREFIX
from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.engine.errors import CompactionStateError
from app.formats.apis.messages_reports import report_in_reply
from app.main import build_state
from app.settings import Settings
from tests.conftest import CLAUDE_CODE, load_json

AGENT = CLAUDE_CODE / "4d5611e5.agent-a2898e3.anthropic.json"  # 66 messages, ~54k tokens
RESPONSES = CLAUDE_CODE / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.responses.json"
COMPACT_AT_30K = {
    "edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 30_000}}]
}


@pytest.fixture
def state(tmp_path: Path) -> AppState:
    return build_state(
        Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}", state_key="test-key-0123456789")
    )


def request(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = copy.deepcopy(load_json(AGENT))
    body.update(extra)
    return body


def first_text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else content[0].get("text", "")


def test_anthropic_compaction_round_trips_through_the_block(state: AppState) -> None:
    service = state.native.anthropic
    body = request(context_management=COMPACT_AT_30K)
    original = body["messages"]
    edited = asyncio.run(service.apply(body, "default"))
    assert edited.compaction is not None and edited.compaction.summary
    forwarded = edited.body["messages"]
    assert "context_management" not in edited.body and edited.body["model"] == body["model"]
    assert first_text(forwarded[0]).startswith(SUMMARY_MARKER_PREFIX)
    kept = forwarded[1:]
    assert kept == original[len(original) - len(kept) :]  # the tail, verbatim
    assert edited.input_tokens < 30_000 < edited.original_input_tokens

    # The client appends the reply (compaction block first) and its next question.
    reply = report_in_reply(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Done."}],
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
        edited.report(),
    )
    assert reply["content"][0]["type"] == "compaction"
    assert reply["usage"]["iterations"][0]["type"] == "compaction"
    turn2 = request(context_management=COMPACT_AT_30K)
    turn2["messages"] += [
        {"role": "assistant", "content": reply["content"]},
        {"role": "user", "content": "And now the tests?"},
    ]
    again = asyncio.run(service.apply(turn2, "default"))
    assert again.compaction is None  # under the trigger now: no second summary
    assert again.body["messages"] == [
        *forwarded,
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        {"role": "user", "content": "And now the tests?"},
    ]

    # A tampered state, or one for another tenant, is refused.
    tampered = copy.deepcopy(turn2)
    block = tampered["messages"][-2]["content"][0]
    block["encrypted_content"] = block["encrypted_content"][:-3] + "AAA"
    with pytest.raises(CompactionStateError):
        asyncio.run(service.apply(tampered, "default"))
    with pytest.raises(CompactionStateError, match="another tenant"):
        asyncio.run(service.apply(turn2, "other"))


def test_a_client_written_block_is_the_summary_and_a_null_one_is_a_no_op(
    state: AppState,
) -> None:
    service = state.native.anthropic
    messages = [
        {"role": "user", "content": "old question"},
        {"role": "assistant", "content": "old answer"},
        {"role": "assistant", "content": [{"type": "compaction", "content": "We fixed X."}]},
        {"role": "user", "content": "next"},
    ]
    edited = asyncio.run(service.apply({"model": "claude-sonnet-4-5", "messages": messages}))
    assert edited.body["messages"] == [
        {"role": "user", "content": f"{state.compaction.marker.render('We fixed X.')}"},
        {"role": "user", "content": "next"},
    ]
    null_block = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [{"type": "compaction", "content": None}, {"type": "text", "text": "a"}],
        },
    ]
    edited = asyncio.run(service.apply({"model": "m", "messages": null_block}))
    assert edited.body["messages"] == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
    ]


def test_pause_after_compaction_and_clearing_edits_report_in_the_sdk_shape(
    state: AppState,
) -> None:
    service = state.native.anthropic
    cm = {
        "edits": [
            {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}},
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 10_000},
                "keep": {"type": "tool_uses", "value": 2},
            },
            {**COMPACT_AT_30K["edits"][0], "pause_after_compaction": True},
        ]
    }
    body = request(context_management=cm)
    for message in body["messages"]:
        if message["role"] == "assistant" and isinstance(message["content"], list):
            message["content"].insert(0, {"type": "thinking", "thinking": "Let me think. " * 50})
    edited = asyncio.run(service.apply(body, "default"))
    thinking, clear = edited.applied_edits
    assert thinking.type == "clear_thinking_20251015"
    assert thinking.cleared_thinking_turns > 0 and thinking.cleared_input_tokens > 0
    assert clear.type == "clear_tool_uses_20250919"
    assert clear.cleared_tool_uses > 0 and clear.cleared_input_tokens > 0
    assert edited.input_tokens == (
        edited.original_input_tokens - thinking.cleared_input_tokens - clear.cleared_input_tokens
    )
    # Clearing alone took the history under the compaction trigger: nothing to pause for.
    assert edited.input_tokens <= 30_000
    assert edited.compaction is None and not edited.paused
    assistants = [m for m in edited.body["messages"] if m["role"] == "assistant"]
    with_thinking = [m for m in assistants if m["content"][0]["type"] == "thinking"]
    assert with_thinking == [assistants[-1]]
    cm["edits"] = [cm["edits"][2]]
    paused = asyncio.run(service.apply(request(context_management=cm), "default"))
    assert paused.paused
    assert paused.has_edits and paused.applied_edits == ()


def test_clear_tool_uses_keeps_the_newest_and_counts_what_it_saved(state: AppState) -> None:
    cm = {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "tool_uses", "value": 3},
                "keep": {"type": "tool_uses", "value": 3},
                "clear_tool_inputs": True,
            }
        ]
    }
    edited = asyncio.run(state.native.anthropic.apply(request(context_management=cm)))
    (report,) = edited.applied_edits
    texts = [
        str(block.get("content"))
        for message in edited.body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]
    assert sum(CLEARED_RESULT_PREFIX in t for t in texts) == report.cleared_tool_uses
    assert all(CLEARED_RESULT_PREFIX not in t for t in texts[-3:])
    assert edited.input_tokens == edited.original_input_tokens - report.cleared_input_tokens


def test_responses_compaction_item_replaces_everything_before_it(state: AppState) -> None:
    service = state.native.responses
    body = copy.deepcopy(load_json(RESPONSES))
    body["context_management"] = [{"type": "compaction", "compact_threshold": 40_000}]
    edited = asyncio.run(service.apply(body, "default"))
    assert edited.item is not None and edited.item["type"] == "compaction"
    forwarded = edited.body["input"]
    assert "context_management" not in edited.body
    kept = forwarded[1:]
    assert kept == body["input"][len(body["input"]) - len(kept) :]
    assert edited.tokens_after is not None and edited.tokens_after < 40_000

    turn2 = {
        "model": body["model"],
        "input": [
            *body["input"],
            edited.item,
            {"type": "message", "role": "assistant", "content": "ok"},
            {"role": "user", "content": "next"},
        ],
        "context_management": body["context_management"],
    }
    again = asyncio.run(service.apply(turn2, "default"))
    assert again.item is None
    assert again.body["input"] == [*forwarded, *turn2["input"][-2:]]
    altered = {
        "model": "gpt-4o",
        "input": [{"type": "compaction", "encrypted_content": "ccs1.a.b"}],
    }
    with pytest.raises(CompactionStateError):
        service.input_tokens(altered)
    # SPEC §11: a foreign item (OpenAI's own encrypted state) is refused on vendor routes.
    vendor = {"model": "gpt-4o", "input": [{"type": "compaction", "encrypted_content": "gAAAA"}]}
    with pytest.raises(CompactionStateError, match="did not write"):
        service.input_tokens(vendor)


def test_clear_tool_inputs_can_name_the_tools_whose_inputs_go(state: AppState) -> None:
    cm = {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "tool_uses", "value": 1},
                "keep": {"type": "tool_uses", "value": 1},
                "clear_tool_inputs": ["Bash", "Glob"],
            }
        ]
    }
    body = request(context_management=cm)
    edited = asyncio.run(state.native.anthropic.apply(body))
    assert edited.applied_edits[0].cleared_tool_uses > 0
    before = {
        b["id"]: b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    }
    after = [
        b
        for m in edited.body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    changed = {b["name"] for b in after if b["input"] != before[b["id"]]["input"]}
    # Only the named tools lose inputs (a Glob pattern is too short to be worth clearing).
    assert "Bash" in changed and changed <= {"Bash", "Glob"}
    assert all(set(b["input"]) == {"_cleared"} for b in after if b["name"] in changed)
    assert after[-1]["input"] == before[after[-1]["id"]]["input"]  # the kept use is whole
