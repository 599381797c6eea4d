"""Vendor-native context management, the pure parts: edits parsed as the SDKs send them,
thinking cleared, compaction blocks found, signed state, and the rewritten streams."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.engine import native_edits as ne
from app.engine.errors import CompactionStateError, InvalidContextManagementError
from app.engine.native_edits import CompactionReport, NativeReport
from app.formats.apis import messages_edits as na
from app.formats.apis import responses_context as nr
from app.formats.apis.messages_reports import (
    StreamReportWriter,
    paused_stream,
    report_in_reply,
)
from app.formats.apis.responses_reports import ResponsesStreamItemWriter, item_in_reply
from app.services.native.signed_state import StateSigner


def test_edits_parse_with_the_vendor_defaults_and_order() -> None:
    edits = na.parse_context_management(
        {
            "edits": [
                {"type": "clear_thinking_20251015"},
                {"type": "clear_tool_uses_20250919"},
                {"type": "compact_20260112"},
            ]
        }
    )
    assert edits == (
        ne.ClearThinkingEdit(na.CLEAR_THINKING, keep_turns=1),
        ne.ClearToolUsesEdit(
            na.CLEAR_TOOL_USES, trigger=ne.Trigger("input_tokens", 100_000), keep=3
        ),
        ne.CompactEdit(na.COMPACT, trigger_tokens=150_000),
    )


def test_edits_parse_every_option() -> None:
    (clear, thinking, compact) = na.parse_context_management(
        {
            "edits": [
                {
                    "type": "clear_tool_uses_20250919",
                    "trigger": {"type": "tool_uses", "value": 4},
                    "keep": {"type": "tool_uses", "value": 1},
                    "clear_at_least": {"type": "input_tokens", "value": 500},
                    "exclude_tools": ["web_search"],
                    "clear_tool_inputs": ["Bash"],
                },
                {"type": "clear_thinking_20251015", "keep": "all"},
                {
                    "type": "compact_20260112",
                    "trigger": {"type": "input_tokens", "value": 50_000},
                    "instructions": "Keep file paths.",
                    "pause_after_compaction": True,
                },
            ]
        }
    )
    assert clear == ne.ClearToolUsesEdit(
        na.CLEAR_TOOL_USES, ne.Trigger("tool_uses", 4), 1, 500, ("web_search",), ("Bash",)
    )
    assert thinking == ne.ClearThinkingEdit(na.CLEAR_THINKING, keep_turns=None)
    assert compact == ne.CompactEdit(na.COMPACT, 50_000, "Keep file paths.", True)
    keep_two = {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}}
    two_turns = ne.ClearThinkingEdit(na.CLEAR_THINKING, 2)
    assert na.parse_context_management({"edits": [keep_two]}) == (two_turns,)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"edits": [{"type": "clear_everything_20990101"}]}, "unknown context management edit"),
        ({"edits": [{"type": "compact_20260112", "trigger": 5}]}, r"edits\[0\]\.trigger"),
        ({"edits": [{"type": "compact_20260112", "surprise": 1}]}, "unknown field 'surprise'"),
        ({"edits": "clear"}, "must be an array"),
        (["compact"], "must be an object"),
        (
            {"edits": [{"type": "clear_tool_uses_20250919", "keep": {"type": "x", "value": 1}}]},
            "tool_uses",
        ),
    ],
)
def test_bad_edits_say_what_to_fix(value: Any, says: str) -> None:
    with pytest.raises(InvalidContextManagementError, match=says):
        na.parse_context_management(value)


def _assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


THINK = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
TEXT = {"type": "text", "text": "answer"}


def test_clear_thinking_keeps_the_newest_turns_and_every_other_block() -> None:
    messages = [
        {"role": "user", "content": "q1"},
        _assistant(THINK, TEXT),
        {"role": "user", "content": "q2"},
        _assistant({"type": "redacted_thinking", "data": "xx"}, TEXT),
        {"role": "user", "content": "q3"},
        _assistant(THINK, TEXT),
    ]
    cleared, turns = na.clear_thinking(messages, 1)
    assert turns == 2
    assert cleared[1]["content"] == [TEXT] and cleared[3]["content"] == [TEXT]
    assert cleared[5] is messages[5] and cleared[0] is messages[0]
    assert messages[1]["content"] == [THINK, TEXT]  # the input is never modified
    assert na.clear_thinking(messages, None) == (messages, 0)
    assert na.clear_thinking(messages, 5)[1] == 0


def test_compaction_blocks_are_found_and_null_ones_ignored() -> None:
    messages = [
        {"role": "user", "content": "old"},
        _assistant({"type": "compaction", "content": "SUMMARY-1"}, TEXT),
        {"role": "user", "content": "mid"},
        _assistant({"type": "compaction", "content": None}, TEXT),
        {"role": "user", "content": "new"},
    ]
    mark = na.last_compaction(messages)
    assert mark == ne.CompactionMark(1, 0, "SUMMARY-1", None)
    after = na.after_compaction(messages, mark)
    assert after[0] == _assistant(TEXT) and after[1:] == messages[2:]
    assert na.without_compaction_blocks(after) == [
        _assistant(TEXT),
        {"role": "user", "content": "mid"},
        _assistant(TEXT),
        {"role": "user", "content": "new"},
    ]
    with pytest.raises(InvalidContextManagementError, match="non-empty string"):
        na.last_compaction([_assistant({"type": "compaction", "content": " "})])


def test_signed_state_round_trips_and_refuses_tampering_and_other_tenants() -> None:
    signer = StateSigner(b"k" * 32)
    token = signer.seal({"kept": [{"role": "user", "content": "hi"}]}, "t1")
    assert signer.open(token, "t1") == {"kept": [{"role": "user", "content": "hi"}]}
    body, mac = token.split(".")[1:]
    flipped = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1]
    for bad in (f"ccs1.{flipped}.{mac}", token + "x", "gAAAAABforeign", ""):
        with pytest.raises(CompactionStateError):
            signer.open(bad, "t1")
    with pytest.raises(CompactionStateError, match="another tenant"):
        signer.open(token, "t2")
    with pytest.raises(CompactionStateError, match="signature"):
        StateSigner(b"other-key").open(token, "t1")
    assert StateSigner(None).ephemeral and not signer.ephemeral


def _events(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for frame in raw.decode().split("\n\n"):
        data = [line[5:].strip() for line in frame.splitlines() if line.startswith("data:")]
        if data:
            out.append(json.loads("\n".join(data)))
    return out


def _sse(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


BLOCK = na.compaction_block("SUMMARY", "ccs1.state.mac")
REPORT = NativeReport(CompactionReport("SUMMARY", "ccs1.state.mac", 900, 120), (), has_edits=True)


def test_stream_writer_puts_the_compaction_block_first_whatever_the_chunking() -> None:
    upstream = b"".join(
        [
            _sse(
                {
                    "type": "message_start",
                    "message": {"id": "m", "content": [], "usage": {"input_tokens": 40}},
                }
            ),
            _sse({"type": "content_block_start", "index": 0, "content_block": TEXT}),
            _sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}),
            _sse({"type": "content_block_stop", "index": 0}),
            _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 7},
                }
            ),
            _sse({"type": "message_stop"}),
        ]
    )
    for size in (1, 7, len(upstream)):
        writer = StreamReportWriter(REPORT)
        out = b"".join(writer.feed(upstream[i : i + size]) for i in range(0, len(upstream), size))
        events = _events(out + writer.close())
        kinds = [(e["type"], e.get("index")) for e in events]
        assert kinds == [
            ("message_start", None),
            ("content_block_start", 0),
            ("content_block_delta", 0),
            ("content_block_stop", 0),
            ("content_block_start", 1),
            ("content_block_delta", 1),
            ("content_block_stop", 1),
            ("message_delta", None),
            ("message_stop", None),
        ]
        assert events[2]["delta"] == {
            "type": "compaction_delta",
            "content": "SUMMARY",
            "encrypted_content": "ccs1.state.mac",
        }
        delta = events[7]
        assert delta["context_management"] == {"applied_edits": []}
        assert [
            (i["type"], i["input_tokens"], i["output_tokens"]) for i in delta["usage"]["iterations"]
        ] == [("compaction", 900, 120), ("message", 40, 7)]


def test_reply_and_paused_reply_carry_the_report() -> None:
    reply = {"content": [TEXT], "usage": {"input_tokens": 40, "output_tokens": 7}}
    out = report_in_reply(reply, REPORT)
    assert out["content"] == [BLOCK, TEXT] and out["usage"]["input_tokens"] == 40
    assert out["usage"]["iterations"][0]["type"] == "compaction"
    assert report_in_reply(reply, NativeReport()) is reply
    events = _events(b"".join(paused_stream("claude-x", REPORT)))
    assert events[-2]["delta"]["stop_reason"] == "compaction"
    assert events[2]["delta"]["content"] == "SUMMARY"


def test_responses_context_management_and_items() -> None:
    assert nr.parse_context_management(None) is None
    assert nr.parse_context_management([{"type": "compaction"}]) == ne.CompactionEntry(None)
    assert nr.parse_context_management(
        [{"type": "compaction", "compact_threshold": 2000}]
    ) == ne.CompactionEntry(2000)
    for bad in ([{"type": "truncate"}], [{"type": "compaction", "compact_threshold": 0}], {}):
        with pytest.raises(InvalidContextManagementError):
            nr.parse_context_management(bad)
    assert nr.input_items("hi") == [{"type": "message", "role": "user", "content": "hi"}]
    items = [{"role": "user", "content": "a"}, {"type": "compaction", "encrypted_content": "x"}]
    assert nr.last_compaction_index(items) == 1


def test_responses_stream_writer_announces_the_item_and_renumbers() -> None:
    item = nr.compaction_item("cmp_1", "ccs1.a.b")
    upstream = b"".join(
        [
            _sse({"type": "response.created", "sequence_number": 0, "response": {"output": []}}),
            _sse({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0}),
            _sse(
                {
                    "type": "response.completed",
                    "sequence_number": 2,
                    "response": {"output": [{"type": "message"}]},
                }
            ),
        ]
    )
    writer = ResponsesStreamItemWriter(item)
    events = _events(writer.feed(upstream[:30]) + writer.feed(upstream[30:]) + writer.close())
    assert [(e["type"], e["sequence_number"], e.get("output_index")) for e in events] == [
        ("response.created", 0, None),
        ("response.output_item.added", 1, 0),
        ("response.output_item.done", 2, 0),
        ("response.output_item.added", 3, 1),
        ("response.completed", 4, None),
    ]
    assert events[-1]["response"]["output"][0] == item
    assert item_in_reply({"output": [1]}, item) == {"output": [item, 1]}
