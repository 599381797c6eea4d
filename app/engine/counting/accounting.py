"""Token accounting rules: messages, system prompt, tool definitions, images.

The rules are named by what they do, not by a wire format: each wire format chooses its
`CountingDialect` (app.formats). The chat-framing dialect follows OpenAI's published
counting rules (3 tokens per message, the role, content and name encoded, 1 more for a
name, 3 to prime the reply) and function tools follow the published per-function /
per-property constants; both reproduce the `prompt_tokens` OpenAI reports for its
examples. Parts OpenAI does not publish (tool calls inside assistant messages) and every
Anthropic count are close approximations, reported with `exact: false` by the caller.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.engine.counting.images import anthropic_image_tokens, openai_image_tokens
from app.engine.messages import Block, BlockKind, Message
from app.engine.ports import Tokenizer

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3
# Framing around each tool call in an assistant turn (not published; measured shape).
TOKENS_PER_TOOL_CALL = 3
# Anthropic adds a tool-use system prompt when tools are present (documented per model,
# 313-346 tokens for current models); we use the larger figure to stay on the safe side.
ANTHROPIC_TOOLS_PREAMBLE = 346
DEFAULT_IMAGE_TOKENS = 1200


@dataclass(frozen=True, slots=True)
class ToolCountingConstants:
    """OpenAI's published function-tool constants for one model family."""

    func_init: int
    prop_init: int
    prop_key: int
    enum_init: int
    enum_item: int
    func_end: int


TOOL_CONSTANTS: dict[str, ToolCountingConstants] = {
    "gpt-4o": ToolCountingConstants(7, 3, 3, -3, 3, 12),
    "gpt-4": ToolCountingConstants(10, 3, 3, -3, 3, 12),
}


class ToolsRule(StrEnum):
    """How tool definitions reach the model, and so what they cost."""

    # OpenAI's function tools: the published per-function and per-property constants.
    FUNCTION_CONSTANTS = "function_constants"
    # Tool definitions as JSON after a fixed tool-use preamble (Anthropic's documented shape).
    JSON_WITH_PREAMBLE = "json_with_preamble"


class ImageRule(StrEnum):
    """Which published image formula applies when the pixel size is known."""

    TILES = "tiles"  # OpenAI: base + per 512-px tile
    PIXELS = "pixels"  # Anthropic: width × height / 750


@dataclass(frozen=True, slots=True)
class CountingDialect:
    """Everything about counting that depends on the wire format, as data.

    A wire format module declares its dialect; nothing here knows format names.
    """

    # Cache-key name of the dialect (counts of one dialect never serve another).
    name: str
    tools: ToolsRule
    images: ImageRule
    # Tokens that prime the reply after the last message.
    reply_priming: int = 0
    # A top-level system prompt is sent as a framed system message.
    frame_system_text: bool = False
    # Counts may be exact when the model's own encoding is used (OpenAI's published rules).
    exact_capable: bool = False


@dataclass(frozen=True, slots=True)
class CountingRules:
    """Everything that changes a count besides the text: dialect, family, image default."""

    dialect: CountingDialect
    tools_family: str = "gpt-4o"
    image_tokens: int = DEFAULT_IMAGE_TOKENS

    @property
    def cache_key(self) -> tuple[str, str, int]:
        return (self.dialect.name, self.tools_family, self.image_tokens)


def message_cost_parts(message: Message, rules: CountingRules) -> tuple[int, list[str]]:
    """(fixed tokens, texts still to tokenize) for one message, framing included.

    Split this way so a caller can tokenize the texts of many messages in one batch.
    """
    fixed = TOKENS_PER_MESSAGE
    texts = [message.role.value]
    if message.name:
        fixed += TOKENS_PER_NAME
        texts.append(message.name)
    for block in message.blocks:
        kind = block.kind
        if kind is BlockKind.IMAGE:
            fixed += _image_tokens(block, rules)
        elif kind is BlockKind.TOOL_CALL:
            fixed += TOKENS_PER_TOOL_CALL
            texts.append(block.tool_name or "")
            texts.append(block.arguments)
        elif block.text:
            texts.append(block.text)
    return fixed, texts


def count_message(message: Message, tokenizer: Tokenizer, rules: CountingRules) -> int:
    """Tokens one message costs, framing included."""
    fixed, texts = message_cost_parts(message, rules)
    return fixed + sum(tokenizer.count(text) for text in texts)


def count_system_text(text: str, tokenizer: Tokenizer, rules: CountingRules) -> int:
    """Tokens of a top-level system prompt (Anthropic `system`, or a given system text)."""
    if not text:
        return 0
    if rules.dialect.frame_system_text:
        # Sent as a system message: framed like one.
        return TOKENS_PER_MESSAGE + tokenizer.count("system") + tokenizer.count(text)
    return tokenizer.count(text)


def count_tools(tools: Sequence[Any], tokenizer: Tokenizer, rules: CountingRules) -> int:
    """Tokens the tool definitions cost."""
    if not tools:
        return 0
    if rules.dialect.tools is ToolsRule.FUNCTION_CONSTANTS:
        constants = TOOL_CONSTANTS.get(rules.tools_family, TOOL_CONSTANTS["gpt-4o"])
        return _openai_tools(tools, tokenizer, constants)
    return ANTHROPIC_TOOLS_PREAMBLE + sum(tokenizer.count(_compact_json(t)) for t in tools)


def _openai_tools(tools: Sequence[Any], tokenizer: Tokenizer, c: ToolCountingConstants) -> int:
    total = 0
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, Mapping) else {}
        if not isinstance(function, Mapping):
            total += tokenizer.count(_compact_json(tool))
            continue
        total += c.func_init
        description = _strip_period(str(function.get("description") or ""))
        total += tokenizer.count(f"{function.get('name', '')}:{description}")
        parameters = function.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
        if isinstance(properties, Mapping) and properties:
            total += c.prop_init
            for key, schema in properties.items():
                total += c.prop_key + _openai_property(str(key), schema, tokenizer, c)
    return total + c.func_end


def _openai_property(key: str, schema: Any, tokenizer: Tokenizer, c: ToolCountingConstants) -> int:
    if not isinstance(schema, Mapping):
        return tokenizer.count(f"{key}:{_compact_json(schema)}")
    total = 0
    enum = schema.get("enum")
    if isinstance(enum, list):
        total += c.enum_init
        for item in enum:
            total += c.enum_item + tokenizer.count(str(item))
    kind = schema.get("type", "")
    description = _strip_period(str(schema.get("description") or ""))
    total += tokenizer.count(
        f"{key}:{kind if isinstance(kind, str) else _compact_json(kind)}:{description}"
    )
    # The published rule covers flat properties; nested schemas (objects, arrays, unions)
    # still reach the model, so their remaining structure is counted as JSON.
    nested = {k: v for k, v in schema.items() if k not in ("type", "description", "enum")}
    if nested:
        total += tokenizer.count(_compact_json(nested))
    return total


def _strip_period(text: str) -> str:
    return text[:-1] if text.endswith(".") else text


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _image_tokens(block: Block, rules: CountingRules) -> int:
    info = block.image
    if info is None or info.width is None or info.height is None:
        return rules.image_tokens
    if rules.dialect.images is ImageRule.TILES:
        return openai_image_tokens(info.width, info.height, info.detail)
    return anthropic_image_tokens(info.width, info.height)
