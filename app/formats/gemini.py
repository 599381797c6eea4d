"""Gemini API `contents` and `systemInstruction` ↔ engine messages (SPEC §19).

A content is `{role: "user" | "model", parts: [...]}`; a part holds one of `text` (with
`thought: true` it is the model's reasoning), `inlineData`, `fileData`, `functionCall`,
`functionResponse`, `executableCode`, `codeExecutionResult`, or a server-side `toolCall` /
`toolResponse`; a `thoughtSignature` rides on the part it signs. Parts the service does not
know are carried as they are and counted by their JSON.

Function calls carry an `id` only sometimes: a `functionResponse` answers the call with its
`id`, else the oldest unanswered call of its name (so parallel calls to one function pair in
order). The pairing is given to the engine as call ids (`name#n` for a call without one),
so a cut never separates a call from its response. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.clearing import ClearedToolUse
from app.engine.counting.accounting import CountingDialect, ImageRule, ToolsRule
from app.engine.messages import Block, BlockKind, Conversation, Message, Role
from app.engine.tools import ToolDefinition, ToolSet
from app.formats.common import (
    compact_json,
    expect_str,
    fail,
    image_block,
    known_role,
    other_block,
    top_system,
    type_name,
)

FORMAT = "gemini"
_ROLES = {"user": Role.USER, "model": Role.ASSISTANT}
# Keys a part may carry beside its content; everything else names what the part holds.
_PART_METADATA = frozenset(
    {"thought", "thoughtSignature", "thought_signature", "videoMetadata", "partMetadata"}
)
# A function response whose whole payload is one text under one of these keys is that
# text (Gemini's documented `output`, and what clients commonly send).
_RESULT_TEXT_KEYS = ("output", "result", "content")

# (message index, part index) → the call id the engine sees for that call or response.
PairKeys = dict[tuple[int, int], str]


def _parts(raw: Any) -> list[Any]:
    parts = raw.get("parts") if isinstance(raw, dict) else None
    return parts if isinstance(parts, list) else []


def _name_of(value: Any) -> str:
    name = value.get("name") if isinstance(value, dict) else None
    return name if isinstance(name, str) else ""


def _given_id(value: Any) -> str | None:
    found = value.get("id") if isinstance(value, dict) else None
    return found if isinstance(found, str) and found else None


def pair_keys(raws: Sequence[Any]) -> PairKeys:
    """The call id of every function call and response in `raws`: its own `id`, else the
    key of the oldest unanswered call of its name (a call without an id is `name#n`)."""
    keys: PairKeys = {}
    unanswered: dict[str, deque[str]] = {}
    counts: dict[str, int] = {}
    for i, raw in enumerate(raws):
        for j, part in enumerate(_parts(raw)):
            if not isinstance(part, dict):
                continue
            call, response = part.get("functionCall"), part.get("functionResponse")
            if isinstance(call, dict):
                name = _name_of(call)
                key = _given_id(call)
                if key is None:
                    key = f"{name}#{counts.get(name, 0)}"
                    counts[name] = counts.get(name, 0) + 1
                unanswered.setdefault(name, deque()).append(key)
                keys[(i, j)] = key
            elif isinstance(response, dict):
                name = _name_of(response)
                queue = unanswered.get(name, deque())
                key = _given_id(response)
                if key is not None:
                    if key in queue:
                        queue.remove(key)
                elif queue:
                    key = queue.popleft()
                else:
                    key = f"{name}#unanswered{j}@{i}"
                keys[(i, j)] = key
    return keys


def parse_message(raw: Any, where: str, keys: Mapping[int, str] | None = None) -> Message:
    """One content; `keys` are its parts' call ids (by part index) when the whole
    history was paired, else calls and responses are keyed by id, then name."""
    if not isinstance(raw, dict):
        raise fail(where, f"each content must be an object, got {type_name(raw)}")
    unknown = (
        "unknown role {role_name!r} for format gemini; use user or model (the system "
        "prompt goes in the top-level systemInstruction)"
    )
    role = known_role(raw.get("role", "user"), _ROLES, where, unknown)
    parts = raw.get("parts")
    if not isinstance(parts, list):
        raise fail(f"{where}.parts", f"must be an array of parts, got {type_name(parts)}")
    blocks = tuple(
        _part(part, f"{where}.parts[{j}]", (keys or {}).get(j)) for j, part in enumerate(parts)
    )
    return Message(role=role, blocks=blocks, raw=raw)


def _named(part: dict[str, Any], field: str, where: str) -> tuple[dict[str, Any], str]:
    """A `functionCall` or `functionResponse` object and the function name it carries."""
    value = part[field]
    if not isinstance(value, dict):
        raise fail(f"{where}.{field}", "must be an object with a name")
    return value, expect_str(value.get("name"), f"{where}.{field}.name")


def _part(part: Any, where: str, key: str | None) -> Block:
    if not isinstance(part, dict):
        raise fail(where, f"each part must be an object, got {type_name(part)}")
    if "text" in part:
        text = expect_str(part.get("text"), f"{where}.text")
        kind = BlockKind.THINKING if part.get("thought") is True else BlockKind.TEXT
        return Block(kind=kind, text=text)
    if "functionCall" in part:
        call, name = _named(part, "functionCall", where)
        return Block(
            kind=BlockKind.TOOL_CALL,
            tool_call_id=key or _given_id(call) or name,
            tool_name=name,
            arguments=compact_json(call.get("args", {})),
        )
    if "functionResponse" in part:
        response, name = _named(part, "functionResponse", where)
        return Block(
            kind=BlockKind.TOOL_RESULT,
            text=result_text(response.get("response")),
            tool_call_id=key or _given_id(response) or name,
            tool_name=name,
            is_error=isinstance(response.get("response"), dict) and "error" in response["response"],
        )
    if "inlineData" in part:
        return _inline(part["inlineData"])
    if "fileData" in part:
        return image_block(None)  # a file by URI: no size to read, charged by default
    if "executableCode" in part:
        return _server_text(part["executableCode"], "code")
    if "codeExecutionResult" in part:
        return _server_text(part["codeExecutionResult"], "output")
    if "toolCall" in part or "toolResponse" in part:
        return _server_tool(part)
    if set(part) <= _PART_METADATA:
        return Block(kind=BlockKind.OTHER)  # a signature alone: opaque, not model input
    return other_block(part)


def result_text(response: Any) -> str:
    """A function response's payload as the text the engine counts and summarizes."""
    if isinstance(response, dict) and len(response) == 1:
        ((key, value),) = response.items()
        if key in _RESULT_TEXT_KEYS and isinstance(value, str):
            return value
    return compact_json(response if response is not None else {})


def _inline(data: Any) -> Block:
    if not isinstance(data, dict):
        return other_block(data)
    mime = data.get("mimeType") or data.get("mime_type")
    payload = data.get("data")
    if isinstance(mime, str) and mime.startswith("image/"):
        return image_block(payload if isinstance(payload, str) else None)
    # Audio, video and documents: no published per-byte rule here; charged by default.
    return Block(kind=BlockKind.IMAGE)


def _server_text(value: Any, field: str) -> Block:
    """Code the model ran with the built-in tool, or its output: counted by its text."""
    text = value.get(field) if isinstance(value, dict) else None
    return Block(kind=BlockKind.OTHER, text=text if isinstance(text, str) else compact_json(value))


def _server_tool(part: dict[str, Any]) -> Block:
    """A server-side tool call or its response (paired by `id`, echoed back by the client)."""
    is_call = "toolCall" in part
    value = part["toolCall"] if is_call else part["toolResponse"]
    call_id = _given_id(value)
    if call_id is None:
        return other_block(part)
    if is_call:
        return Block(
            kind=BlockKind.TOOL_CALL,
            tool_call_id=call_id,
            tool_name=str(value.get("toolType") or "tool"),
            arguments=compact_json(value.get("args", {})),
        )
    return Block(kind=BlockKind.TOOL_RESULT, text=compact_json(value), tool_call_id=call_id)


def system_text(system: Any) -> str:
    """`systemInstruction` as text: a content's text parts (or a string, or a list of parts)."""
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    parts = system.get("parts") if isinstance(system, dict) else system
    if not isinstance(parts, list):
        raise fail(
            "system",
            f"must be a content with text parts (or a string), got {type_name(system)}",
        )
    texts = []
    for i, part in enumerate(parts):
        if not isinstance(part, dict) or not isinstance(part.get("text"), str):
            raise fail(f"system.parts[{i}]", "system instruction parts must be text parts")
        texts.append(part["text"])
    return "\n".join(texts)


def first_system_text(raws: Sequence[Any], system: Any) -> str | None:
    """The request's first system text (`systemInstruction`), None when it has none."""
    return system_text(system) or None


def leading_system_count(raws: Sequence[Any]) -> int:
    """Always 0: the system prompt is `systemInstruction`, never a message."""
    return 0


def parse_tools(tools: Sequence[Any], fields: Mapping[str, Any]) -> ToolSet:
    """The request's tool definitions (`functionDeclarations`)."""
    return gemini_tools(tools)


def parse(messages: Sequence[Any], system: Any = None, tools: ToolSet = ToolSet()) -> Conversation:
    """A whole request: systemInstruction, contents (calls paired) and tools."""
    keys = pair_keys(messages)
    by_message: dict[int, dict[int, str]] = {}
    for (i, j), key in keys.items():
        by_message.setdefault(i, {})[j] = key
    parsed = tuple(
        parse_message(raw, f"contents[{i}]", by_message.get(i)) for i, raw in enumerate(messages)
    )
    top = top_system(system_text(system), system)
    return Conversation(format=FORMAT, system=top, messages=parsed, tools=tools)


def summary_message(text: str) -> dict[str, Any]:
    """The content of a summary message."""
    return {"role": "user", "parts": [{"text": text}]}


def proves(raw: Any) -> bool:
    """`parts` instead of `content`, or the `model` role: only Gemini has them."""
    if not isinstance(raw, dict):
        return False
    return (isinstance(raw.get("parts"), list) and "content" not in raw) or raw.get(
        "role"
    ) == "model"


def clear_contents(raws: Sequence[Any], cleared: Sequence[ClearedToolUse]) -> list[Any]:
    """`raws` with each cleared call's response (and, when asked, its args) replaced; the
    part's other fields (its thoughtSignature) kept."""
    by_id = {c.tool_call_id: c for c in cleared}
    if not by_id:
        return list(raws)
    keys = pair_keys(raws)
    out: list[Any] = []
    for i, raw in enumerate(raws):
        parts = _parts(raw)
        new_parts = [
            _cleared_part(part, by_id.get(keys.get((i, j), ""))) for j, part in enumerate(parts)
        ]
        changed = any(a is not b for a, b in zip(new_parts, parts, strict=True))
        out.append({**raw, "parts": new_parts} if changed else raw)
    return out


def _cleared_part(part: Any, use: ClearedToolUse | None) -> Any:
    if use is None or not isinstance(part, dict):
        return part
    response = part.get("functionResponse")
    if isinstance(response, dict):
        return {**part, "functionResponse": {**response, "response": {"output": use.placeholder}}}
    call = part.get("functionCall")
    if isinstance(call, dict) and use.input_placeholder is not None:
        return {**part, "functionCall": {**call, "args": json.loads(use.input_placeholder)}}
    return part


def gemini_tools(tools: Sequence[Any]) -> ToolSet:
    """`tools`: each function declaration counted as its JSON, built-in tools likewise."""
    definitions: list[ToolDefinition] = []
    for tool in tools:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        if isinstance(declarations, list):
            definitions.extend(ToolDefinition(raw=d) for d in declarations)
            rest = {k: v for k, v in tool.items() if k != "functionDeclarations"}
            if rest:
                definitions.append(ToolDefinition(raw=rest))
        else:
            definitions.append(ToolDefinition(raw=tool))
    return ToolSet(tuple(definitions))


DIALECT = CountingDialect(
    # No public Gemini tokenizer ships offline: o200k text counts are an approximation, and
    # tool declarations are counted as their JSON with no published preamble.
    name="gemini",
    tools=ToolsRule.JSON_WITH_PREAMBLE,
    images=ImageRule.FIXED_TILES,
    tools_preamble=0,
)


# The module is the format (its WireFormat members; mypy checks them in the registry):
name, dialect, top_level_system_is_evidence = FORMAT, DIALECT, False
apply_cleared = clear_contents
