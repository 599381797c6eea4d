"""Anthropic Messages API `messages` and `system` ↔ engine messages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.clearing import ClearedToolUse
from app.engine.counting.accounting import CountingDialect, ImageRule, ToolsRule
from app.engine.messages import Block, BlockKind, Conversation, Message, Role
from app.engine.tools import ToolDefinition, ToolSet
from app.formats.clearing import clear_block_messages
from app.formats.common import (
    compact_json,
    expect_str,
    fail,
    image_block,
    is_one_of,
    other_block,
    type_name,
)

FORMAT = "anthropic"
_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT}
# Content block types only the Messages API has.
ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)


def parse_message(raw: Any, where: str) -> Message:
    """One Messages API message; raises InvalidHistoryError naming the bad field."""
    if not isinstance(raw, dict):
        raise fail(where, f"each message must be an object, got {type_name(raw)}")
    role_name = raw.get("role")
    role = _ROLES.get(role_name) if isinstance(role_name, str) else None
    if role is None:
        raise fail(
            f"{where}.role",
            f"unknown role {role_name!r} for format anthropic; use user or assistant "
            "(the system prompt goes in the top-level system field)",
        )
    content = raw.get("content")
    at = f"{where}.content"
    if isinstance(content, str):
        blocks: tuple[Block, ...] = (Block(kind=BlockKind.TEXT, text=content),) if content else ()
    elif isinstance(content, list):
        parsed: list[Block] = []
        for i, block in enumerate(content):
            parsed.extend(_block(block, f"{at}[{i}]"))
        blocks = tuple(parsed)
    else:
        raise fail(at, f"must be a string or an array of content blocks, got {type_name(content)}")
    return Message(role=role, blocks=blocks, raw=raw)


def _block(block: Any, where: str) -> list[Block]:
    if not isinstance(block, dict):
        raise fail(where, f"each content block must be an object, got {type_name(block)}")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise fail(f"{where}.type", "each content block needs a string type")
    if kind == "text":
        return [Block(kind=BlockKind.TEXT, text=expect_str(block.get("text"), f"{where}.text"))]
    if kind == "image":
        return [_image(block.get("source"))]
    if kind == "document":
        return [_document(block.get("source"), block)]
    if kind == "tool_use":
        call_id = block.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise fail(f"{where}.id", "a tool_use block needs a non-empty string id")
        name = expect_str(block.get("name"), f"{where}.name")
        arguments = block.get("input", {})
        return [
            Block(
                kind=BlockKind.TOOL_CALL,
                tool_call_id=call_id,
                tool_name=name,
                arguments=compact_json(arguments),
            )
        ]
    if kind == "tool_result":
        return _tool_result(block, where)
    if kind == "thinking":
        text = expect_str(block.get("thinking"), f"{where}.thinking", optional=True)
        return [Block(kind=BlockKind.THINKING, text=text)]
    if kind == "redacted_thinking":
        data = expect_str(block.get("data"), f"{where}.data", optional=True)
        return [Block(kind=BlockKind.REDACTED_THINKING, text=data)]
    return [other_block(block)]


def _image(source: Any) -> Block:
    if isinstance(source, dict) and source.get("type") == "base64":
        data = source.get("data")
        return image_block(data if isinstance(data, str) else None)
    return image_block(None)


def _document(source: Any, block: dict[str, Any]) -> Block:
    if isinstance(source, dict) and source.get("type") == "text":
        data = source.get("data")
        return Block(kind=BlockKind.DOCUMENT, text=data if isinstance(data, str) else "")
    # PDFs and URLs: no text to count here; charged like an image by default.
    return Block(kind=BlockKind.IMAGE)


def _tool_result(block: dict[str, Any], where: str) -> list[Block]:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise fail(f"{where}.tool_use_id", "a tool_result block needs a non-empty tool_use_id")
    content = block.get("content")
    extras: list[Block] = []
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            for inner in _block(part, f"{where}.content[{i}]"):
                if inner.kind in (BlockKind.TEXT, BlockKind.DOCUMENT, BlockKind.OTHER):
                    texts.append(inner.text)
                else:
                    extras.append(inner)
        text = "\n".join(texts)
    else:
        raise fail(f"{where}.content", f"must be a string or an array, got {type_name(content)}")
    result = Block(
        kind=BlockKind.TOOL_RESULT,
        text=text,
        tool_call_id=call_id,
        is_error=block.get("is_error") is True,
    )
    return [result, *extras]


def system_text(system: Any) -> str:
    """The top-level system prompt as text (string or text blocks)."""
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    if not isinstance(system, list):
        raise fail(
            "system", f"must be a string or an array of text blocks, got {type_name(system)}"
        )
    texts = []
    for i, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise fail(f"system[{i}]", "system blocks must be objects of type text")
        texts.append(expect_str(block.get("text"), f"system[{i}].text"))
    return "\n".join(texts)


def parse(messages: Sequence[Any], system: Any = None, tools: ToolSet = ToolSet()) -> Conversation:
    """A whole request: top-level system, messages and tools."""
    parsed = tuple(parse_message(raw, f"messages[{i}]") for i, raw in enumerate(messages))
    text = system_text(system)
    top = (
        (Message(role=Role.SYSTEM, blocks=(Block(kind=BlockKind.TEXT, text=text),), raw=system),)
        if text
        else ()
    )
    return Conversation(format=FORMAT, system=top, messages=parsed, tools=tools)


def summary_message(text: str) -> dict[str, Any]:
    """The wire object of a summary message."""
    return {"role": "user", "content": text}


def proves(raw: Any) -> bool:
    """Content block types only the Messages API has."""
    content = raw.get("content") if isinstance(raw, dict) else None
    return isinstance(content, list) and any(
        isinstance(block, dict) and is_one_of(block.get("type"), ANTHROPIC_BLOCKS)
        for block in content
    )


DIALECT = CountingDialect(
    name="messages",
    tools=ToolsRule.JSON_WITH_PREAMBLE,
    images=ImageRule.PIXELS,
)


class AnthropicMessagesFormat:
    """Anthropic Messages API `messages` with a top-level `system`."""

    name = FORMAT
    dialect = DIALECT
    top_level_system_is_evidence = True

    def parse(
        self, messages: Sequence[Any], system: Any = None, tools: ToolSet = ToolSet()
    ) -> Conversation:
        return parse(messages, system, tools)

    def parse_tools(self, tools: Sequence[Any], fields: Mapping[str, Any]) -> ToolSet:
        # Tools are counted by their JSON; `tool_choice` has no published cost here.
        return ToolSet(tuple(ToolDefinition(raw=tool) for tool in tools))

    def first_system_text(self, raws: Sequence[Any], system: Any) -> str | None:
        return system_text(system) or None

    def parse_message(self, raw: Any, where: str) -> Message:
        return parse_message(raw, where)

    def proves(self, raw: Any) -> bool:
        return proves(raw)

    def leading_system_count(self, raws: Sequence[Any]) -> int:
        return 0  # the system prompt is a top-level field, never a message

    def system_text(self, system: Any) -> str:
        return system_text(system)

    def summary_message(self, text: str) -> dict[str, Any]:
        return summary_message(text)

    def apply_cleared(self, raws: Sequence[Any], cleared: Sequence[ClearedToolUse]) -> list[Any]:
        return clear_block_messages(raws, cleared)


ANTHROPIC_MESSAGES = AnthropicMessagesFormat()
