"""Anthropic Messages API `messages` and `system` ↔ engine messages."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.engine.counting.accounting import CountingDialect, ImageRule, ToolsRule
from app.engine.messages import Block, BlockKind, Conversation, Message, Role
from app.engine.tools import ToolDefinition, ToolSet
from app.formats import common
from app.formats.clearing import clear_block_messages

FORMAT = "anthropic"
_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT}
# Blocks of a tool result read as its text; the rest (images) travel beside it.
_RESULT_TEXT_KINDS = frozenset({BlockKind.TEXT, BlockKind.DOCUMENT, BlockKind.OTHER})
# Content block types only the Messages API has.
ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)


def parse_message(raw: Any, where: str) -> Message:
    """One Messages API message; raises InvalidHistoryError naming the bad field."""
    if not isinstance(raw, dict):
        raise common.fail(where, f"each message must be an object, got {common.type_name(raw)}")
    unknown = (
        "unknown role {role_name!r} for format anthropic; use user or assistant "
        "(the system prompt goes in the top-level system field)"
    )
    role = common.known_role(raw.get("role"), _ROLES, where, unknown)
    at = f"{where}.content"

    def blocks(content: list[Any]) -> tuple[Block, ...]:
        return tuple(b for i, block in enumerate(content) for b in _block(block, f"{at}[{i}]"))

    content = common.text_or_parts(raw.get("content"), at, blocks, "content blocks")
    return Message(role=role, blocks=content, raw=raw)


def _block(raw: Any, where: str) -> list[Block]:
    block, kind = common.typed_object(raw, where, "content block")
    if kind == "text":
        return [
            Block(kind=BlockKind.TEXT, text=common.expect_str(block.get("text"), f"{where}.text"))
        ]
    if kind == "image":
        return [_image(block.get("source"))]
    if kind == "document":
        return [_document(block.get("source"), block)]
    if kind == "tool_use":
        call_id = block.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise common.fail(f"{where}.id", "a tool_use block needs a non-empty string id")
        name = common.expect_str(block.get("name"), f"{where}.name")
        arguments = block.get("input", {})
        return [
            Block(
                kind=BlockKind.TOOL_CALL,
                tool_call_id=call_id,
                tool_name=name,
                arguments=common.compact_json(arguments),
            )
        ]
    if kind == "tool_result":
        return _tool_result(block, where)
    if kind == "thinking":
        text = common.expect_str(block.get("thinking"), f"{where}.thinking", optional=True)
        return [Block(kind=BlockKind.THINKING, text=text)]
    if kind == "redacted_thinking":
        data = common.expect_str(block.get("data"), f"{where}.data", optional=True)
        return [Block(kind=BlockKind.REDACTED_THINKING, text=data)]
    return [common.other_block(block)]


def _image(source: Any) -> Block:
    if isinstance(source, dict) and source.get("type") == "base64":
        data = source.get("data")
        return common.image_block(data if isinstance(data, str) else None)
    return common.image_block(None)


def _document(source: Any, block: dict[str, Any]) -> Block:
    if isinstance(source, dict) and source.get("type") == "text":
        data = source.get("data")
        return Block(kind=BlockKind.DOCUMENT, text=data if isinstance(data, str) else "")
    # PDFs and URLs: no text to count here; charged like an image by default.
    return Block(kind=BlockKind.IMAGE)


def _tool_result(block: dict[str, Any], where: str) -> list[Block]:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise common.fail(
            f"{where}.tool_use_id", "a tool_result block needs a non-empty tool_use_id"
        )
    content = block.get("content")

    def parts(content: list[Any]) -> Iterable[Block]:
        for i, part in enumerate(content):
            yield from _block(part, f"{where}.content[{i}]")

    read = common.tool_result_content(content, parts, _RESULT_TEXT_KINDS)
    if read is None:
        raise common.fail(
            f"{where}.content", f"must be a string or an array, got {common.type_name(content)}"
        )
    text, extras = read
    result = Block(
        kind=BlockKind.TOOL_RESULT,
        text=text,
        tool_call_id=call_id,
        is_error=block.get("is_error") is True,
    )
    return [result, *extras]


def system_text(system: Any) -> str:
    """The top-level system prompt as text (string or text blocks)."""
    return common.system_as_text(system, _system_blocks_text, "text blocks")


def first_system_text(raws: Sequence[Any], system: Any) -> str | None:
    """The request's first system text (the top-level `system`), None when it has none."""
    return system_text(system) or None


def leading_system_count(raws: Sequence[Any]) -> int:
    """Always 0: the system prompt is the top-level `system` field, never a message."""
    return 0


def parse_tools(tools: Sequence[Any], fields: Mapping[str, Any]) -> ToolSet:
    """The request's tools, counted by their JSON (`tool_choice` has no published cost)."""
    return ToolSet(tuple(ToolDefinition(raw=tool) for tool in tools))


def _system_blocks_text(system: list[Any]) -> str:
    texts = []
    for i, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise common.fail(f"system[{i}]", "system blocks must be objects of type text")
        texts.append(common.expect_str(block.get("text"), f"system[{i}].text"))
    return "\n".join(texts)


def parse(messages: Sequence[Any], system: Any = None, tools: ToolSet = ToolSet()) -> Conversation:
    """A whole request: top-level system, messages and tools."""
    parsed = tuple(parse_message(raw, f"messages[{i}]") for i, raw in enumerate(messages))
    top = common.top_system(system_text(system), system)
    return Conversation(format=FORMAT, system=top, messages=parsed, tools=tools)


def summary_message(text: str) -> dict[str, Any]:
    """The wire object of a summary message."""
    return {"role": "user", "content": text}


def proves(raw: Any) -> bool:
    """Content block types only the Messages API has."""
    content = raw.get("content") if isinstance(raw, dict) else None
    return isinstance(content, list) and any(
        isinstance(block, dict) and common.is_one_of(block.get("type"), ANTHROPIC_BLOCKS)
        for block in content
    )


DIALECT = CountingDialect(
    name="messages",
    tools=ToolsRule.JSON_WITH_PREAMBLE,
    images=ImageRule.PIXELS,
)


# The module is the format (its WireFormat members; mypy checks them in the registry):
name, dialect, top_level_system_is_evidence = FORMAT, DIALECT, True
apply_cleared = clear_block_messages
