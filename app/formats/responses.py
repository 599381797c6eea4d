"""OpenAI Responses API `input` items ↔ engine messages (SPEC §2, format `responses`).

Every item is one engine message, so indexes in the engine are indexes in `input`:
- `message` items (with or without `type`; roles system, developer, user, assistant),
  content as a string or parts (`input_text`, `output_text`, `input_image`, `input_file`,
  `refusal`); leading system/developer messages are the system prompt.
- `function_call` (`call_id`, `name`, `arguments`) answered by `function_call_output`
  (`call_id`, `output`); every other built-in `*_call` / `*_call_output` pair that carries
  a `call_id` (custom tools, computer use, local shell …) pairs the same way.
- `reasoning` items belong with the item that follows them and never stand alone at a cut.
- `compaction` items and anything the service does not know (an `item_reference`, a
  `web_search_call`, an item with neither `role` nor `type`) are kept and counted as text;
  a vendor's compaction item ends the inline prefix (see `leading_system_count`).
The top-level `instructions` is the system prompt (sent as `system` to the service).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from app.engine.clearing import ClearedToolUse
from app.engine.messages import Block, BlockKind, Conversation, Message, Role
from app.engine.tools import ToolSet
from app.formats import common
from app.formats.common import (
    first_system_text as first_system_text_of,
)
from app.formats.openai import DIALECT as CHAT_DIALECT

FORMAT = "responses"
_ROLES = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
}
# Item types and content part types only the Responses API has: they prove the format.
_ITEM_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "compaction",
        "item_reference",
    }
)
COMPACTION_ITEM = "compaction"
# Parts of a tool output read as its text; the rest (images, files) travel beside it.
_RESULT_TEXT_KINDS = frozenset({BlockKind.TEXT, BlockKind.OTHER})
_PART_TYPES = frozenset({"input_text", "output_text", "input_image", "input_file"})
_TEXT_PARTS = {"input_text": "text", "output_text": "text", "refusal": "refusal", "text": "text"}


def parse_message(raw: Any, where: str) -> Message:
    """One `input` item; raises InvalidHistoryError naming the bad field."""
    if not isinstance(raw, dict):
        raise common.fail(where, f"each input item must be an object, got {common.type_name(raw)}")
    kind = raw.get("type")
    if kind is not None and not isinstance(kind, str):
        raise common.fail(f"{where}.type", f"must be a string, got {common.type_name(kind)}")
    if kind in (None, "message") and "role" in raw:
        return _message_item(raw, where)
    if kind == "message":
        raise common.fail(
            f"{where}.role", "a message item needs a role (system, developer, user, assistant)"
        )
    if kind == "reasoning":
        return _reasoning_item(raw, where)
    call_id = raw.get("call_id")
    if kind is not None and isinstance(call_id, str) and call_id:
        if kind.endswith("_output"):
            return _output_item(raw, kind, call_id, where)
        if kind.endswith("_call"):
            return _call_item(raw, kind, call_id, where)
    if kind in ("function_call", "function_call_output"):
        raise common.fail(f"{where}.call_id", f"a {kind} item needs a non-empty string call_id")
    # Anything else is carried as-is and counted by its JSON text.
    text = common.compact_json(raw)
    role = Role.USER if kind in (None, "compaction", "item_reference") else Role.ASSISTANT
    return Message(role=role, blocks=(Block(kind=BlockKind.OTHER, text=text),), raw=raw)


def _message_item(raw: dict[str, Any], where: str) -> Message:
    unknown = (
        "unknown role {role_name!r} for format responses; use one of "
        + ", ".join(_ROLES)
        + " (tool results are function_call_output items)"
    )
    role = common.known_role(raw.get("role"), _ROLES, where, unknown)
    at = f"{where}.content"

    def parts(content: list[Any]) -> tuple[Block, ...]:
        return tuple(_part(part, f"{at}[{i}]") for i, part in enumerate(content))

    blocks = common.text_or_parts(raw.get("content"), at, parts, "content parts")
    return Message(role=role, blocks=blocks, raw=raw)


def _part(raw: Any, where: str) -> Block:
    part, kind = common.typed_object(raw, where, "content part")
    field = _TEXT_PARTS.get(kind)
    if field is not None:
        return Block(
            kind=BlockKind.TEXT, text=common.expect_str(part.get(field), f"{where}.{field}")
        )
    if kind == "input_image":
        url = part.get("image_url")
        detail = part.get("detail") if isinstance(part.get("detail"), str) else None
        data = url if isinstance(url, str) and url.startswith("data:") else None
        return common.image_block(data, detail)
    if kind == "input_file":
        # A PDF or other file: no text to count here; charged like an image by default.
        return Block(kind=BlockKind.IMAGE)
    return Block(kind=BlockKind.OTHER, text=common.compact_json(part))


def _reasoning_item(raw: dict[str, Any], where: str) -> Message:
    summary = raw.get("summary")
    texts: list[str] = []
    if isinstance(summary, list):
        for i, part in enumerate(summary):
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif part is not None:
                raise common.fail(f"{where}.summary[{i}]", "each summary part needs a string text")
    blocks: list[Block] = [Block(kind=BlockKind.THINKING, text="\n".join(texts))]
    encrypted = raw.get("encrypted_content")
    if isinstance(encrypted, str) and encrypted:
        # Opaque, but sent back to the model: counted as the text it is.
        blocks.append(Block(kind=BlockKind.REDACTED_THINKING, text=encrypted))
    return Message(role=Role.ASSISTANT, blocks=tuple(blocks), raw=raw, binds_to_next=True)


def _call_item(raw: dict[str, Any], kind: str, call_id: str, where: str) -> Message:
    name = raw.get("name")
    if kind == "function_call":
        name = common.expect_str(name, f"{where}.name")
    tool_name = name if isinstance(name, str) and name else kind.removesuffix("_call")
    arguments = raw.get("arguments", raw.get("input", raw.get("action", "")))
    if not isinstance(arguments, str):
        arguments = common.compact_json(arguments)
    block = Block(
        kind=BlockKind.TOOL_CALL, tool_call_id=call_id, tool_name=tool_name, arguments=arguments
    )
    return Message(role=Role.ASSISTANT, blocks=(block,), raw=raw)


def _output_item(raw: dict[str, Any], kind: str, call_id: str, where: str) -> Message:
    output = raw.get("output")

    def parts(output: list[Any]) -> Iterable[Block]:
        return (_part(part, f"{where}.output[{i}]") for i, part in enumerate(output))

    read = common.tool_result_content(output, parts, _RESULT_TEXT_KINDS)
    # Any other shape is kept as its JSON: e.g. a computer-use screenshot object.
    text, extras = read if read is not None else (common.compact_json(output), [])
    result = Block(kind=BlockKind.TOOL_RESULT, text=text, tool_call_id=call_id)
    return Message(role=Role.TOOL, blocks=(result, *extras), raw=raw)


def proves(raw: Any) -> bool:
    """Item types, call ids and content parts only the Responses API has."""
    if not isinstance(raw, dict):
        return False
    kind = raw.get("type")
    if "call_id" in raw:
        return True
    # `type` is unvalidated caller input here: it may be a list or an object.
    if isinstance(kind, str) and (
        kind in _ITEM_TYPES or kind.endswith("_call") or kind.endswith("_call_output")
    ):
        return True
    content = raw.get("content")
    return isinstance(content, list) and any(
        isinstance(part, dict) and common.is_one_of(part.get("type"), _PART_TYPES)
        for part in content
    )


def leading_system_count(raws: Sequence[Any]) -> int:
    """The inline prefix kept verbatim in front: the leading system/developer message
    items, extended through the last `compaction` item when there is one.

    A compaction item still in a history is a vendor's own (OpenAI's encrypted state: the
    service's items are rebuilt before a history is counted), opaque to the service. It
    stands for the conversation before it, so it is never summarized or dropped: it and
    what precedes it stay in front, like a system prompt, and what follows is compacted.
    """
    count = 0
    for raw in raws:
        if not isinstance(raw, dict) or raw.get("type", "message") != "message":
            break
        if raw.get("role") not in ("system", "developer"):
            break
        count += 1
    for index in range(len(raws) - 1, count - 1, -1):
        raw = raws[index]
        if isinstance(raw, dict) and raw.get("type") == COMPACTION_ITEM:
            return index + 1
    return count


def system_text(system: Any) -> str:
    """`instructions` (a string) or text parts as text."""
    return common.system_as_text(system, _system_parts_text, "parts")


def first_system_text(raws: Sequence[Any], system: Any) -> str | None:
    """The first system text (`instructions` or the first system item), None if none."""
    return first_system_text_of(raws, system_text(system), parse_message)


def parse_tools(tools: Sequence[Any], fields: Mapping[str, Any]) -> ToolSet:
    """The request's tool definitions and tool choice."""
    return common.openai_tool_set(tools, fields)


def _system_parts_text(system: list[Any]) -> str:
    parts = [_part(part, f"system[{i}]") for i, part in enumerate(system)]
    return "\n".join(p.text for p in parts if p.kind is BlockKind.TEXT)


def parse(messages: Sequence[Any], system: Any = None, tools: ToolSet = ToolSet()) -> Conversation:
    """A whole request: `instructions` as `system`, `input` items as messages, tools."""
    parsed = tuple(parse_message(raw, f"messages[{i}]") for i, raw in enumerate(messages))
    inline = leading_system_count(messages)
    top = common.top_system(system_text(system), system)
    return Conversation(
        format=FORMAT, system=top, messages=parsed, tools=tools, inline_system_count=inline
    )


def summary_message(text: str) -> dict[str, Any]:
    """The input item of a summary message."""
    return {"type": "message", "role": "user", "content": text}


def clear_items(raws: Sequence[Any], cleared: Sequence[ClearedToolUse]) -> list[Any]:
    """`raws` with each cleared call's output (and, when asked, its input) replaced."""
    by_id = {c.tool_call_id: c for c in cleared}
    if not by_id:
        return list(raws)
    return [_cleared_item(raw, by_id) if isinstance(raw, dict) else raw for raw in raws]


def _cleared_item(raw: dict[str, Any], by_id: Mapping[str, ClearedToolUse]) -> Any:
    kind = raw.get("type")
    use = by_id.get(raw.get("call_id", "")) if isinstance(raw.get("call_id"), str) else None
    if use is None or not isinstance(kind, str):
        return raw
    if kind.endswith("_output"):
        output = raw.get("output")
        placeholder: Any = use.placeholder
        if isinstance(output, list):
            placeholder = [{"type": "input_text", "text": use.placeholder}]
        return {**raw, "output": placeholder}
    if kind.endswith("_call") and use.input_placeholder is not None:
        for field in ("arguments", "input"):
            if isinstance(raw.get(field), str):
                return {**raw, field: use.input_placeholder}
    return raw


# Chat framing is the closest published rule; Responses framing is not published, so
# counts in this format are never reported exact.
DIALECT = replace(CHAT_DIALECT, name="responses", exact_capable=False)


# The module is the format (its WireFormat members; mypy checks them in the registry):
name, dialect, top_level_system_is_evidence = FORMAT, DIALECT, False
apply_cleared = clear_items
