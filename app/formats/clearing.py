"""Cleared tool uses written into wire messages (Chat Completions and Messages API).

Only the cleared result's content (and, when asked, the call's input) changes; every other
field of the message and of the block is kept, and a message with nothing to clear is
returned as the very same object. The input is never modified: changed messages are copies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.clearing import ClearedToolUse


def clear_chat_messages(raws: Sequence[Any], cleared: Sequence[ClearedToolUse]) -> list[Any]:
    """Chat Completions `raws` with each cleared tool use's result (and input) replaced."""
    by_id = {c.tool_call_id: c for c in cleared}
    return [_openai_message(raw, by_id) if isinstance(raw, dict) and by_id else raw for raw in raws]


def clear_block_messages(raws: Sequence[Any], cleared: Sequence[ClearedToolUse]) -> list[Any]:
    """Messages API `raws` (content blocks) with each cleared tool use replaced."""
    by_id = {c.tool_call_id: c for c in cleared}
    return [
        _anthropic_message(raw, by_id) if isinstance(raw, dict) and by_id else raw for raw in raws
    ]


def _openai_message(raw: dict[str, Any], by_id: Mapping[str, ClearedToolUse]) -> Any:
    if raw.get("role") == "tool":
        use = by_id.get(raw.get("tool_call_id", ""))
        if use is None:
            return raw
        return {**raw, "content": _content_like(raw.get("content"), use.placeholder)}
    calls = raw.get("tool_calls")
    if raw.get("role") != "assistant" or not isinstance(calls, list):
        return raw
    changed = False
    new_calls: list[Any] = []
    for call in calls:
        use = by_id.get(call.get("id", "")) if isinstance(call, dict) else None
        function = call.get("function") if use is not None else None
        if use is None or use.input_placeholder is None or not isinstance(function, dict):
            new_calls.append(call)
            continue
        arguments: Any = use.input_placeholder
        if not isinstance(function.get("arguments"), str):
            arguments = json.loads(use.input_placeholder)
        new_calls.append({**call, "function": {**function, "arguments": arguments}})
        changed = True
    return {**raw, "tool_calls": new_calls} if changed else raw


def _anthropic_message(raw: dict[str, Any], by_id: Mapping[str, ClearedToolUse]) -> Any:
    content = raw.get("content")
    if not isinstance(content, list):
        return raw
    changed = False
    blocks: list[Any] = []
    for block in content:
        new = _anthropic_block(block, by_id) if isinstance(block, dict) else block
        changed = changed or new is not block
        blocks.append(new)
    return {**raw, "content": blocks} if changed else raw


def _anthropic_block(block: dict[str, Any], by_id: Mapping[str, ClearedToolUse]) -> Any:
    kind = block.get("type")
    if kind == "tool_result":
        use = by_id.get(block.get("tool_use_id", ""))
        if use is None:
            return block
        return {**block, "content": _content_like(block.get("content"), use.placeholder)}
    if kind == "tool_use":
        use = by_id.get(block.get("id", ""))
        if use is None or use.input_placeholder is None:
            return block
        return {**block, "input": json.loads(use.input_placeholder)}
    return block


def _content_like(content: Any, placeholder: str) -> Any:
    """The placeholder in the shape the content had: a string, or one text part."""
    if isinstance(content, list):
        return [{"type": "text", "text": placeholder}]
    return placeholder
