"""The answers the fake writes, in each API's shape, whole or as server-sent events.

What the model "says" is a `Reply` (text and tool calls, neutral of the API); the usage
comes from the billing.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

Event = tuple[str | None, Any]


@dataclass(frozen=True, slots=True)
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """What the model answers: text, then tool calls."""

    text: str = "ok"
    tool_uses: tuple[ToolUse, ...] = field(default_factory=tuple)

    def rendering(self) -> str:
        """The text whose tokens are the output tokens."""
        calls = "".join(f"\n{t.name}\n{json.dumps(t.input)}" for t in self.tool_uses)
        return self.text + calls


# -- Anthropic Messages -------------------------------------------------------------------


def anthropic_content(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text or not reply.tool_uses:
        blocks.append({"type": "text", "text": reply.text})
    blocks += [
        {"type": "tool_use", "id": t.id, "name": t.name, "input": t.input} for t in reply.tool_uses
    ]
    return blocks


def anthropic_message(model: str, reply: Reply, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": anthropic_content(reply),
        "stop_reason": "tool_use" if reply.tool_uses else "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def anthropic_events(model: str, reply: Reply, usage: dict[str, Any]) -> list[Event]:
    """The stream: input usage in `message_start`, output tokens in `message_delta`."""
    whole = anthropic_message(model, reply, usage)
    start = {**whole, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[Event] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(whole["content"]):
        opening: dict[str, Any]
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


# -- OpenAI Chat Completions --------------------------------------------------------------


def chat_message(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.tool_uses:
        message["tool_calls"] = [
            {
                "id": t.id,
                "type": "function",
                "function": {"name": t.name, "arguments": json.dumps(t.input)},
            }
            for t in reply.tool_uses
        ]
    return message


def chat_completion(model: str, reply: Reply, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": chat_message(reply),
                "finish_reason": "tool_calls" if reply.tool_uses else "stop",
                "logprobs": None,
            }
        ],
        "usage": usage,
    }


def chat_events(model: str, reply: Reply, usage: dict[str, Any], with_usage: bool) -> list[Event]:
    """The stream; the usage chunk comes last, only with `stream_options.include_usage`."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> Event:
        return None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": ""}), chunk({"content": reply.text})]
    for index, call in enumerate(chat_message(reply).get("tool_calls", [])):
        events.append(chunk({"tool_calls": [{"index": index, **call}]}))
    events.append(chunk({}, "tool_calls" if reply.tool_uses else "stop"))
    if with_usage:
        events.append((None, {**base, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return events


# -- OpenAI Responses ---------------------------------------------------------------------


def responses_output(reply: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text or not reply.tool_uses:
        items.append(
            {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    items += [
        {
            "type": "function_call",
            "id": f"fc_{uuid.uuid4().hex[:24]}",
            "call_id": t.id,
            "name": t.name,
            "arguments": json.dumps(t.input),
            "status": "completed",
        }
        for t in reply.tool_uses
    ]
    return items


def response_object(model: str, reply: Reply, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"resp_{uuid.uuid4().hex[:24]}",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": model,
        "output": responses_output(reply),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "usage": usage,
    }


def responses_events(model: str, reply: Reply, usage: dict[str, Any]) -> list[Event]:
    whole = response_object(model, reply, usage)
    created = {**whole, "status": "in_progress", "output": [], "usage": None}
    payloads: list[dict[str, Any]] = [
        {"type": "response.created", "response": created},
        {"type": "response.in_progress", "response": created},
    ]
    for index, item in enumerate(whole["output"]):
        payloads.append({"type": "response.output_item.added", "output_index": index, "item": item})
        payloads.append({"type": "response.output_item.done", "output_index": index, "item": item})
    payloads.append({"type": "response.completed", "response": whole})
    return [(p["type"], {**p, "sequence_number": i}) for i, p in enumerate(payloads)]
