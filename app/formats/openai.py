"""OpenAI Chat Completions `messages` ↔ engine messages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.counting.accounting import REPLY_PRIMING, CountingDialect, ImageRule, ToolsRule
from app.engine.messages import Block, BlockKind, Conversation, Message, Role
from app.engine.tools import ToolSet
from app.formats.clearing import clear_chat_messages
from app.formats.common import (
    compact_json,
    expect_str,
    fail,
    image_block,
    is_one_of,
    known_role,
    openai_tool_set,
    other_block,
    type_name,
)
from app.formats.common import (
    first_system_text as first_system_text_of,
)

FORMAT = "openai"
# Block types only the Anthropic Messages API has: in an OpenAI history they mean the
# caller mixed formats, which would silently miscount and break tool pairing.
ANTHROPIC_ONLY_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)
_ROLES = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "tool": Role.TOOL,
    # Deprecated: a function's result, named by the function (before tool_call_id).
    "function": Role.TOOL,
}
# Content part types only Chat Completions has.
_OPENAI_PARTS = frozenset({"image_url", "input_audio", "refusal", "file"})


def parse_message(raw: Any, where: str) -> Message:
    """One Chat Completions message; raises InvalidHistoryError naming the bad field."""
    if not isinstance(raw, dict):
        raise fail(where, f"each message must be an object, got {type_name(raw)}")
    unknown = "unknown role {role_name!r} for format openai; use one of " + ", ".join(_ROLES)
    role_name = raw.get("role")
    role = known_role(role_name, _ROLES, where, unknown)
    name = raw.get("name")
    if name is not None:
        expect_str(name, f"{where}.name")
    content = raw.get("content")
    if content is None and role is not Role.ASSISTANT:
        # Only assistant messages may omit content (beside tool_calls or a refusal).
        raise fail(f"{where}.content", f"a {role_name} message needs content")
    if role_name == "function":
        function_name = raw.get("name")
        if not isinstance(function_name, str) or not function_name:
            raise fail(f"{where}.name", "a function message needs the function's name")
        text = _content_text(content, f"{where}.content")
        result = Block(kind=BlockKind.TOOL_RESULT, text=text, tool_name=function_name)
        return Message(role=role, blocks=(result,), raw=raw, name=function_name)
    if role is Role.TOOL:
        call_id = raw.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise fail(f"{where}.tool_call_id", "a tool message needs a non-empty tool_call_id")
        text = _content_text(content, f"{where}.content")
        blocks: tuple[Block, ...] = (
            Block(kind=BlockKind.TOOL_RESULT, text=text, tool_call_id=call_id),
        )
        return Message(role=role, blocks=blocks, raw=raw, name=name)
    blocks = _content_blocks(content, f"{where}.content")
    if role is Role.ASSISTANT:
        blocks = (*blocks, *_tool_calls(raw.get("tool_calls"), f"{where}.tool_calls"))
        if raw.get("function_call") is not None:
            blocks = (*blocks, _function_call(raw["function_call"], f"{where}.function_call"))
        if isinstance(raw.get("reasoning_content"), str) and raw["reasoning_content"]:
            blocks = (Block(kind=BlockKind.THINKING, text=raw["reasoning_content"]), *blocks)
    elif raw.get("tool_calls") is not None:
        raise fail(f"{where}.tool_calls", "only assistant messages may carry tool_calls")
    elif raw.get("function_call") is not None:
        raise fail(f"{where}.function_call", "only assistant messages may carry function_call")
    return Message(role=role, blocks=blocks, raw=raw, name=name)


def _content_blocks(content: Any, where: str) -> tuple[Block, ...]:
    if content is None:
        return ()
    if isinstance(content, str):
        return (Block(kind=BlockKind.TEXT, text=content),) if content else ()
    if not isinstance(content, list):
        raise fail(where, f"must be a string, null or an array of parts, got {type_name(content)}")
    return tuple(_part(part, f"{where}[{i}]") for i, part in enumerate(content))


def _part(part: Any, where: str) -> Block:
    if not isinstance(part, dict):
        raise fail(where, f"each content part must be an object, got {type_name(part)}")
    kind = part.get("type")
    if kind == "text":
        return Block(kind=BlockKind.TEXT, text=expect_str(part.get("text"), f"{where}.text"))
    if kind == "refusal":
        return Block(kind=BlockKind.TEXT, text=expect_str(part.get("refusal"), f"{where}.refusal"))
    if kind == "image_url":
        image = part.get("image_url")
        if not isinstance(image, dict) or not isinstance(image.get("url"), str):
            raise fail(f"{where}.image_url", "must be an object with a string url")
        url: str = image["url"]
        detail = image.get("detail") if isinstance(image.get("detail"), str) else None
        return image_block(url if url.startswith("data:") else None, detail)
    if not isinstance(kind, str):
        raise fail(f"{where}.type", "each content part needs a string type")
    if kind in ANTHROPIC_ONLY_BLOCKS:
        raise fail(
            f"{where}.type",
            f"{kind!r} is an Anthropic content block, not an OpenAI content part; "
            "send format=anthropic (or OpenAI tool_calls / role tool messages)",
        )
    return other_block(part)


def _content_text(content: Any, where: str) -> str:
    blocks = _content_blocks(content, where)
    return "\n".join(b.text for b in blocks if b.kind in (BlockKind.TEXT, BlockKind.OTHER))


def _tool_calls(calls: Any, where: str) -> tuple[Block, ...]:
    if calls is None:
        return ()
    if not isinstance(calls, list):
        raise fail(where, f"must be an array, got {type_name(calls)}")
    blocks = []
    for i, call in enumerate(calls):
        at = f"{where}[{i}]"
        if not isinstance(call, dict):
            raise fail(at, f"each tool call must be an object, got {type_name(call)}")
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise fail(f"{at}.id", "each tool call needs a non-empty string id")
        function = call.get("function")
        if not isinstance(function, dict):
            raise fail(f"{at}.function", "must be an object with name and arguments")
        name = expect_str(function.get("name"), f"{at}.function.name")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = compact_json(arguments)
        blocks.append(
            Block(
                kind=BlockKind.TOOL_CALL, tool_call_id=call_id, tool_name=name, arguments=arguments
            )
        )
    return tuple(blocks)


def _function_call(call: Any, where: str) -> Block:
    """The deprecated single `function_call` of an assistant message (it has no id)."""
    if not isinstance(call, dict):
        raise fail(where, f"must be an object with name and arguments, got {type_name(call)}")
    name = expect_str(call.get("name"), f"{where}.name")
    arguments = call.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = compact_json(arguments)
    return Block(kind=BlockKind.TOOL_CALL, tool_name=name, arguments=arguments)


def leading_system_count(raws: Sequence[Any]) -> int:
    """How many of the first wire messages are system/developer messages."""
    count = 0
    for raw in raws:
        if not isinstance(raw, dict) or raw.get("role") not in ("system", "developer"):
            break
        count += 1
    return count


def parse(messages: Sequence[Any], system: Any = None, tools: ToolSet = ToolSet()) -> Conversation:
    """A whole request; leading system/developer messages form the system prompt."""
    parsed = tuple(parse_message(raw, f"messages[{i}]") for i, raw in enumerate(messages))
    inline = 0
    while inline < len(parsed) and parsed[inline].role is Role.SYSTEM:
        inline += 1
    top: tuple[Message, ...] = ()
    if system:
        text = system_text(system)
        top = (
            Message(role=Role.SYSTEM, blocks=(Block(kind=BlockKind.TEXT, text=text),), raw=system),
        )
    return Conversation(
        format=FORMAT, system=top, messages=parsed, tools=tools, inline_system_count=inline
    )


def system_text(system: Any) -> str:
    """A top-level system prompt (a string, or text parts) as text."""
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    blocks = _content_blocks(system, "system")
    return "\n".join(b.text for b in blocks if b.kind is BlockKind.TEXT)


def first_system_text(raws: Sequence[Any], system: Any) -> str | None:
    """The first system text (top-level or the first system message), None if none."""
    return first_system_text_of(raws, system_text(system), parse_message)


def parse_tools(tools: Sequence[Any], fields: Mapping[str, Any]) -> ToolSet:
    """The request's tool definitions (legacy `functions` included) and tool choice."""
    return openai_tool_set(tools, fields, ("functions",))


def proves(raw: Any) -> bool:
    """Roles, fields and content parts only Chat Completions has."""
    if not isinstance(raw, dict):
        return False
    if raw.get("role") in ("system", "developer", "tool", "function"):
        return True
    if "tool_calls" in raw or "tool_call_id" in raw or "function_call" in raw:
        return True
    content = raw.get("content")
    return isinstance(content, list) and any(
        isinstance(part, dict) and is_one_of(part.get("type"), _OPENAI_PARTS) for part in content
    )


def summary_message(text: str) -> dict[str, Any]:
    """The wire object of a summary message."""
    return {"role": "user", "content": text}


DIALECT = CountingDialect(
    name="chat",
    tools=ToolsRule.TYPESCRIPT_NAMESPACE,
    images=ImageRule.TILES,
    reply_priming=REPLY_PRIMING,
    frame_system_text=True,
    exact_capable=True,
)


# The module is the format (its WireFormat members; mypy checks them in the registry):
name, dialect, top_level_system_is_evidence = FORMAT, DIALECT, False
apply_cleared = clear_chat_messages
