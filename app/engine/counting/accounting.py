"""Token accounting rules: messages, system prompt, tool definitions, images.

The rules are named by what they do, not by a wire format: each wire format chooses its
`CountingDialect` (app.formats). The chat-framing dialect follows OpenAI's published
counting rules (3 tokens per message, the role, content and name encoded, 1 more for a
name, 3 to prime the reply); function tools are rendered the way OpenAI shows them to the
model (app.engine.counting.tools); the legacy `function_call` / `role: function` forms
follow the framing API-reported counts confirm. Every part counted by a guess (a tool
call in the newer `tool_calls` form, an image of unknown size, an unfamiliar block) is
reported in an `Estimated` flag, so the caller can say `exact: false` and why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import IntFlag, StrEnum
from typing import Any

from app.engine.counting.images import (
    ANTHROPIC_PIXELS,
    GEMINI_TILES,
    GPT_4O_TILES,
    ImageCostRule,
)
from app.engine.counting.tools import (
    DEFAULT_RENDERING,
    ToolsCost,
    ToolsRendering,
    count_function_tools,
)
from app.engine.messages import Block, BlockKind, Message, Role
from app.engine.ports import Tokenizer
from app.engine.tools import ToolSet

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3
# Framing around a call in an assistant turn: API-confirmed for the legacy
# `function_call` (hmarr/openai-chat-tokens), the same shape assumed for `tool_calls`.
TOKENS_PER_TOOL_CALL = 3
# A legacy `role: "function"` result costs 2 less than a named message (API-confirmed).
FUNCTION_RESULT_ADJUSTMENT = -2
# Anthropic adds a tool-use system prompt when tools are present (documented per model,
# 313-346 tokens for current models); we use the larger figure to stay on the safe side.
ANTHROPIC_TOOLS_PREAMBLE = 346
DEFAULT_IMAGE_TOKENS = 1200


class ToolsRule(StrEnum):
    """How tool definitions reach the model, and so what they cost."""

    # OpenAI's function tools: the TypeScript-like `namespace functions` block.
    TYPESCRIPT_NAMESPACE = "typescript_namespace"
    # Tool definitions as JSON after a fixed tool-use preamble (Anthropic's documented shape).
    JSON_WITH_PREAMBLE = "json_with_preamble"


class ImageRule(StrEnum):
    """The image formula a dialect falls back on when the model has no family rule."""

    TILES = "tiles"  # OpenAI: base + per 512-px tile (gpt-4o constants)
    PIXELS = "pixels"  # Anthropic: width × height / 750
    FIXED_TILES = "fixed_tiles"  # Gemini: 258 per image up to 384 px, per 768-px tile beyond

    @property
    def default_rule(self) -> ImageCostRule:
        return _DEFAULT_IMAGE_RULES[self]


_DEFAULT_IMAGE_RULES = {
    ImageRule.TILES: GPT_4O_TILES,
    ImageRule.PIXELS: ANTHROPIC_PIXELS,
    ImageRule.FIXED_TILES: GEMINI_TILES,
}


class Estimated(IntFlag):
    """Parts of a count that no published or API-confirmed rule covers."""

    NONE = 0
    IMAGES = 1  # unknown pixel size, or no image formula for the model's family
    TOOL_CALLS = 2  # `tool_calls` / tool_use blocks (OpenAI publishes no framing)
    TOOL_RESULTS = 4  # role `tool` / tool_result blocks
    THINKING = 8  # reasoning text carried in the history
    BLOCKS = 16  # documents and blocks the service does not interpret
    TOOLS = 32  # tool definitions outside the confirmed schema constructs

    @property
    def names(self) -> tuple[str, ...]:
        """Lower-case part names, in flag order (`images`, `tool_calls`, ...)."""
        return tuple(f.name.lower() for f in Estimated if f and f in self and f.name)


ESTIMATED_BITS = max(f.value for f in Estimated).bit_length()


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
    # JSON tool definitions: the tool-use system prompt the vendor adds when tools are sent.
    tools_preamble: int = ANTHROPIC_TOOLS_PREAMBLE


@dataclass(frozen=True, slots=True)
class CountingRules:
    """Everything that changes a count besides the text: dialect, the model family's
    tools layout and image formula, the unknown-image default, a correction factor."""

    dialect: CountingDialect
    tools_rendering: ToolsRendering = DEFAULT_RENDERING
    # Other layouts the model might use: where its own is not confirmed for a request's
    # tools, the largest of their counts is taken, so an unconfirmed count is never under.
    tools_upper_bounds: tuple[ToolsRendering, ...] = ()
    # The model family's image formula; None: the dialect's fallback, reported estimated.
    image_rule: ImageCostRule | None = None
    image_tokens: int = DEFAULT_IMAGE_TOKENS
    # Multiplies approximate text counts (registry `token_factor`, e.g. for Claude).
    token_factor: float = 1.0
    cache_key: tuple[Any, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # One string: its hash is computed once, while every per-message lookup hashes
        # the key again (a tuple of dataclasses would rehash each field every time).
        key = (
            f"{self.dialect.name}|{self.tools_rendering!r}|{self.image_rule!r}"
            f"|{self.image_tokens}|{self.token_factor!r}|{self.tools_upper_bounds!r}",
        )
        object.__setattr__(self, "cache_key", key)

    def scaled(self, text_tokens: int) -> int:
        """Text tokens after the correction factor (unchanged at 1.0)."""
        if self.token_factor == 1.0:
            return text_tokens
        return round(text_tokens * self.token_factor)


@dataclass(frozen=True, slots=True)
class MessageCost:
    """A message's fixed tokens, the texts still to tokenize, and what was guessed."""

    fixed: int
    texts: list[str]
    estimated: Estimated


def message_cost(message: Message, rules: CountingRules) -> MessageCost:
    """Fixed tokens, texts to tokenize and guessed parts for one message, framing included.

    Split this way so a caller can tokenize the texts of many messages in one batch.
    """
    fixed = TOKENS_PER_MESSAGE
    texts = [message.role.value]
    estimated = Estimated.NONE
    if message.name:
        fixed += TOKENS_PER_NAME
        texts.append(message.name)
    for block in message.blocks:
        kind = block.kind
        if kind is BlockKind.IMAGE:
            tokens, known = _image_tokens(block, rules)
            fixed += tokens
            if not known:
                estimated |= Estimated.IMAGES
        elif kind is BlockKind.TOOL_CALL:
            fixed += TOKENS_PER_TOOL_CALL
            texts.append(block.tool_name or "")
            texts.append(block.arguments)
            # A call without an id is the legacy `function_call`, whose cost is confirmed.
            if block.tool_call_id is not None:
                estimated |= Estimated.TOOL_CALLS
        else:
            if block.text:
                texts.append(block.text)
            estimated |= _guessed_block(block, message)
    if message.role is Role.TOOL and not message.tool_result_ids and message.name:
        # Legacy `role: "function"` result: named by the function, no call id.
        fixed += FUNCTION_RESULT_ADJUSTMENT
    return MessageCost(fixed=fixed, texts=texts, estimated=estimated)


def _guessed_block(block: Block, message: Message) -> Estimated:
    kind = block.kind
    if kind is BlockKind.TEXT:
        return Estimated.NONE
    if kind is BlockKind.TOOL_RESULT:
        legacy_function = block.tool_call_id is None and bool(message.name)
        return Estimated.NONE if legacy_function else Estimated.TOOL_RESULTS
    if kind in (BlockKind.THINKING, BlockKind.REDACTED_THINKING):
        return Estimated.THINKING
    return Estimated.BLOCKS


def count_system_text(text: str, tokenizer: Tokenizer, rules: CountingRules) -> int:
    """Tokens of a top-level system prompt (Anthropic `system`, or a given system text)."""
    if not text:
        return 0
    if rules.dialect.frame_system_text:
        # Sent as a system message: framed like one.
        return TOKENS_PER_MESSAGE + rules.scaled(tokenizer.count("system") + tokenizer.count(text))
    return rules.scaled(tokenizer.count(text))


def count_tools(
    tools: ToolSet,
    tokenizer: Tokenizer,
    rules: CountingRules,
    *,
    system_text: str | None = None,
) -> ToolsCost:
    """Tokens the tool definitions cost; `system_text` is the request's first system
    message text (None when it has none), which OpenAI's rendering shares."""
    if not tools:
        return ToolsCost(tokens=0, exact=True)
    if rules.dialect.tools is ToolsRule.TYPESCRIPT_NAMESPACE:
        cost = count_function_tools(
            tools, tokenizer, rules.tools_rendering, system_text=system_text
        )
        tokens = cost.tokens
        if not cost.exact:
            # The model's layout is not confirmed for these tools: count under every
            # layout known and keep the largest, so the guess is never below the truth.
            for layout in rules.tools_upper_bounds:
                other = count_function_tools(tools, tokenizer, layout, system_text=system_text)
                tokens = max(tokens, other.tokens)
        return ToolsCost(tokens=rules.scaled(tokens), exact=cost.exact)
    tokens = rules.dialect.tools_preamble + sum(
        tokenizer.count(_compact_json(t.raw)) for t in tools.definitions
    )
    return ToolsCost(tokens=rules.scaled(tokens), exact=False)


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _image_tokens(block: Block, rules: CountingRules) -> tuple[int, bool]:
    """(tokens, known): the family's formula, or the configured default when it needs a
    pixel size the data did not give (or the model has no image formula)."""
    info = block.image
    rule = rules.image_rule or rules.dialect.images.default_rule
    detail = info.detail if info else None
    tokens = rule.tokens(info.width if info else None, info.height if info else None, detail)
    if tokens is None:
        return rules.image_tokens, False
    return tokens, rules.image_rule is not None
