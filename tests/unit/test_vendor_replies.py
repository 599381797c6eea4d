"""What the vendor APIs say, read the way the proxy reads it: context-overflow answers
recognized, streamed replies reassembled from their events (text, tool calls, thinking)
and recorded only when the stream finished, and which messages of a resent history are
new."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from app.formats.apis.chat_completions import CHAT_COMPLETIONS
from app.formats.apis.messages import MESSAGES
from app.formats.apis.protocol import usage_report
from app.formats.apis.registry import VENDOR_APIS
from app.formats.apis.responses import RESPONSES
from app.services.proxy.turns import new_messages


def sse(*events: tuple[str | None, Any]) -> bytes:
    out = b""
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        text = data if isinstance(data, str) else json.dumps(data)
        out += f"{head}data: {text}\n\n".encode()
    return out


@pytest.mark.parametrize(
    ("status", "body", "overflow"),
    [
        (400, {"error": {"code": "context_length_exceeded", "message": "too long"}}, True),
        (400, {"type": "error", "error": {"message": "prompt is too long: 3 > 2"}}, True),
        (413, "anything", True),
        (400, {"error": {"code": "invalid_value", "message": "bad temperature"}}, False),
        (429, {"error": {"code": "context_length_exceeded"}}, False),
        (400, "not json", False),
    ],
)
def test_context_overflow_is_recognized(status: int, body: Any, overflow: bool) -> None:
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    for api in VENDOR_APIS:
        assert api.is_overflow(status, raw) is overflow, api.name


def test_a_chat_stream_with_parallel_tool_calls_is_reassembled_across_chunk_splits() -> None:
    def chunk(delta: dict[str, Any]) -> tuple[None, dict[str, Any]]:
        return None, {"choices": [{"index": 0, "delta": delta}]}

    stream = sse(
        chunk({"role": "assistant", "content": None}),
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "c1", "function": {"name": "read", "arguments": ""}}
                ]
            }
        ),
        chunk(
            {
                "tool_calls": [
                    {"index": 1, "id": "c2", "function": {"name": "ls", "arguments": "{}"}}
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"a.py"}'}}]}),
        (None, {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 9}}),
        (None, "[DONE]"),
    )
    capture = CHAT_COMPLETIONS.stream_capture()
    finished = [capture.feed(stream[i : i + 7]) for i in range(0, len(stream), 7)]
    assert finished[-1] and not finished[0]
    reply = capture.reply()
    assert reply is not None
    assert reply.messages == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"a.py"}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            ],
        }
    ]
    assert reply.usage == {"input_tokens": 50, "output_tokens": 9}


def test_an_anthropic_stream_with_thinking_and_tool_use_is_reassembled() -> None:
    stream = sse(
        (
            "message_start",
            {
                "type": "message_start",
                "message": {"usage": {"input_tokens": 70, "cache_read_input_tokens": 5}},
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Let me look."},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "sig"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "t1", "name": "read", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"path": "a'},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '.py"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 12},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )
    capture = MESSAGES.stream_capture()
    assert capture.feed(stream)
    reply = capture.reply()
    assert reply is not None
    assert reply.messages == [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Let me look.", "signature": "sig"},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.py"}},
            ],
        }
    ]
    assert reply.usage == {"input_tokens": 70, "cache_read_input_tokens": 5, "output_tokens": 12}


def test_a_responses_stream_is_taken_from_its_completed_event() -> None:
    output = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "run", "arguments": "{}"},
    ]
    stream = sse(
        ("response.created", {"type": "response.created", "response": {"output": []}}),
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": {"output": output, "usage": {"input_tokens": 3, "output_tokens": 4}},
            },
        ),
    )
    capture = RESPONSES.stream_capture()
    assert capture.feed(stream)
    reply = capture.reply()
    assert reply is not None and reply.messages == output
    assert reply.usage == {"input_tokens": 3, "output_tokens": 4}


def test_a_stream_that_is_not_sse_json_records_nothing() -> None:
    capture = CHAT_COMPLETIONS.stream_capture()
    assert not capture.feed(b"data: {not json}\n\n")
    assert capture.reply() is None


def test_whole_bodies_give_their_reply() -> None:
    chat = {"choices": [{"message": {"role": "assistant", "content": "hi", "refusal": None}}]}
    reply = CHAT_COMPLETIONS.reply_from_body(json.dumps(chat).encode())
    assert reply is not None and reply.messages == [{"role": "assistant", "content": "hi"}]
    assert MESSAGES.reply_from_body(b'{"type": "error"}') is None
    assert usage_report({"input_tokens": 1, "output_tokens": True, "server_tool_use": {}}) == {
        "input_tokens": 1
    }


def test_new_messages_are_those_after_the_last_assistant_message() -> None:
    history: list[Any] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "a"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "out"},
        {"role": "user", "content": "b"},
    ]
    assert new_messages("openai", history) == history[3:]
    assert new_messages("openai", history[:2]) == history[:2]
    items: list[Any] = [
        {"role": "user", "content": "a"},
        {"type": "reasoning", "id": "r", "summary": []},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "x"},
    ]
    assert new_messages("responses", items) == items[3:]


@pytest.mark.parametrize(
    "chunk",
    [
        {"choices": [{"index": 0, "delta": "x"}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": ["x"]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"name": 5}}]}}]},
    ],
)
def test_an_odd_stream_event_stops_recording_not_the_stream(chunk: dict[str, Any]) -> None:
    # Found by review: an AttributeError here cut a session-bound stream mid-answer.
    capture = CHAT_COMPLETIONS.stream_capture()
    assert capture.feed(b"data: " + orjson.dumps(chunk) + b"\n\n") is False
    assert capture.reply() is None


def _chat_deltas(*texts: str) -> bytes:
    return sse(*((None, {"choices": [{"index": 0, "delta": {"content": t}}]}) for t in texts))


def test_a_chat_stream_cut_before_its_end_gives_no_reply() -> None:
    # Issue 21.4: three deltas, then a clean end with no finish_reason and no [DONE].
    capture = CHAT_COMPLETIONS.stream_capture()
    assert not capture.feed(_chat_deltas("tok0 ", "tok1 ", "tok2 "))
    assert not capture.finished
    assert capture.reply() is None


def test_a_chat_stream_that_says_why_it_stopped_is_finished_without_done() -> None:
    stop = sse((None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    capture = CHAT_COMPLETIONS.stream_capture()
    capture.feed(_chat_deltas("all ", "done") + stop)
    assert capture.finished
    reply = capture.reply()
    assert reply is not None and reply.messages[0]["content"] == "all done"


def test_an_anthropic_stream_without_message_stop_gives_no_reply() -> None:
    stream = sse(
        ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 9}}}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "half a rep"},
            },
        ),
    )
    capture = MESSAGES.stream_capture()
    assert not capture.feed(stream)
    assert capture.reply() is None


def test_a_responses_stream_without_its_completed_event_gives_no_reply() -> None:
    stream = sse(("response.created", {"type": "response.created", "response": {"output": []}}))
    capture = RESPONSES.stream_capture()
    assert not capture.feed(stream)
    assert capture.reply() is None
