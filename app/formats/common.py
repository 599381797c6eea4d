"""Helpers shared by the format parsers."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from app.engine.counting.images import image_size_from_base64
from app.engine.errors import InvalidHistoryError
from app.engine.messages import Block, BlockKind, ImageInfo, Message, Role
from app.engine.tools import ToolChoice, ToolChoiceKind, ToolDefinition, ToolSet


def fail(where: str, problem: str) -> InvalidHistoryError:
    return InvalidHistoryError(f"{where}: {problem}", where=where)


def known_role(role_name: Any, roles: Mapping[str, Role], where: str, unknown: str) -> Role:
    """The role `role_name` names; InvalidHistoryError at `where.role` with the
    `unknown` advice (formatted with the name) when it names none."""
    role = roles.get(role_name) if isinstance(role_name, str) else None
    if role is None:
        raise fail(f"{where}.role", unknown.format(role_name=role_name))
    return role


def text_or_parts(
    content: Any, at: str, parts: Callable[[list[Any]], tuple[Block, ...]], what: str
) -> tuple[Block, ...]:
    """A message content that is a string (one text block, none when empty) or an array
    read by `parts`; InvalidHistoryError at `at` naming the array's `what` otherwise."""
    if isinstance(content, str):
        return (Block(kind=BlockKind.TEXT, text=content),) if content else ()
    if isinstance(content, list):
        return parts(content)
    raise fail(at, f"must be a string or an array of {what}, got {type_name(content)}")


def tool_result_content(
    content: Any, parts: Callable[[list[Any]], Iterable[Block]], textual: frozenset[BlockKind]
) -> tuple[str, list[Block]] | None:
    """A tool result's text and the blocks that travel beside it (images, files): from
    no content, a string, or an array read by `parts` (its `textual` blocks joined).
    None for any other shape: each format says what that means."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    extras: list[Block] = []
    for block in parts(content):
        if block.kind in textual:
            texts.append(block.text)
        else:
            extras.append(block)
    return "\n".join(texts), extras


def system_as_text(system: Any, array_text: Callable[[list[Any]], str], what: str) -> str:
    """A top-level system prompt as text: none, a string, or an array read by
    `array_text`; InvalidHistoryError naming the array's `what` for any other shape."""
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    if not isinstance(system, list):
        raise fail("system", f"must be a string or an array of {what}, got {type_name(system)}")
    return array_text(system)


def top_system(text: str, raw: Any) -> tuple[Message, ...]:
    """The top-level system prompt as the conversation's system message; none when it
    has no text."""
    if not text:
        return ()
    return (Message(role=Role.SYSTEM, blocks=(Block(kind=BlockKind.TEXT, text=text),), raw=raw),)


def typed_object(value: Any, where: str, what: str) -> tuple[dict[str, Any], str]:
    """A content block or part (`what`): an object and its string `type`;
    InvalidHistoryError naming what is wrong otherwise."""
    if not isinstance(value, dict):
        raise fail(where, f"each {what} must be an object, got {type_name(value)}")
    kind = value.get("type")
    if not isinstance(kind, str):
        raise fail(f"{where}.type", f"each {what} needs a string type")
    return value, kind


def expect_str(value: Any, where: str, *, optional: bool = False) -> str:
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        raise fail(where, f"must be a string, got {type_name(value)}")
    return value


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "number" if isinstance(value, int | float) else type(value).__name__
    )


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def other_block(value: Any) -> Block:
    """A block we do not interpret: carried as-is, counted by its JSON text."""
    return Block(kind=BlockKind.OTHER, text=compact_json(value))


def image_block(data: str | None, detail: str | None = None) -> Block:
    """An image; its pixel size is read when base64 data is present."""
    size = image_size_from_base64(data) if data else None
    info = (
        ImageInfo(width=size[0], height=size[1], detail=detail)
        if size
        else ImageInfo(detail=detail)
    )
    return Block(kind=BlockKind.IMAGE, image=info)


def is_one_of(value: Any, names: frozenset[str]) -> bool:
    """`value in names` for unvalidated input: a list or an object is never a member (and
    must not raise TypeError as an unhashable set key)."""
    return isinstance(value, str) and value in names


def openai_tool(tool: Any) -> ToolDefinition:
    """A Chat Completions tool (`{"type": "function", "function": {...}}`), a Responses
    tool (`{"type": "function", "name": ...}`) or a legacy `functions` entry; anything
    else (built-in, custom) is kept as its JSON."""
    if isinstance(tool, Mapping):
        if isinstance(tool.get("function"), Mapping):
            return ToolDefinition(raw=tool, function=tool["function"])
        if tool.get("type", "function") == "function" and isinstance(tool.get("name"), str):
            return ToolDefinition(raw=tool, function=tool)
    return ToolDefinition(raw=tool)


def openai_tool_choice(value: Any) -> ToolChoice:
    """`tool_choice` (or the legacy request-level `function_call`) as a ToolChoice."""
    if value is None or value == "auto":
        return ToolChoice()
    if value == "none":
        return ToolChoice(ToolChoiceKind.NONE)
    if isinstance(value, Mapping):
        function = value.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return ToolChoice(ToolChoiceKind.NAMED, function["name"])
        if isinstance(value.get("name"), str):
            return ToolChoice(ToolChoiceKind.NAMED_LEGACY, value["name"])
    return ToolChoice(ToolChoiceKind.OTHER)


def openai_tool_set(
    tools: Sequence[Any], fields: Mapping[str, Any], legacy: Sequence[str] = ()
) -> ToolSet:
    """The tools of an OpenAI request: `tools`, then the legacy list fields named in
    `legacy`; the choice from `tool_choice`, else the legacy `function_call`."""
    declared = [*tools]
    for name in legacy:
        value = fields.get(name)
        if isinstance(value, list):
            declared.extend(value)
    choice = fields.get("tool_choice")
    if choice is None:
        choice = fields.get("function_call")
    return ToolSet(tuple(openai_tool(t) for t in declared), openai_tool_choice(choice))


def first_system_text(
    raws: Sequence[Any], top_level: str, parse_message: Callable[[Any, str], Message]
) -> str | None:
    """The request's first system text: the top-level one, else the first inline
    system/developer message's; None when it has none (OpenAI renders the function tools
    into that message)."""
    if top_level:
        return top_level
    for i, raw in enumerate(raws):
        if isinstance(raw, dict) and raw.get("role") in ("system", "developer"):
            return parse_message(raw, f"messages[{i}]").text
    return None
