"""Tool definitions and the tool choice of a request, normalized by the wire formats.

The engine counts what the model is shown; which JSON shape declared a tool (Chat
Completions, Responses, legacy `functions`, Anthropic) is the formats' business.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One declared tool. `function` is a function tool's definition as sent (`name`,
    `description`, `parameters`); a built-in or custom tool has none and is counted by
    its wire JSON (`raw`)."""

    raw: Any
    function: Mapping[str, Any] | None = None


class ToolChoiceKind(StrEnum):
    AUTO = "auto"
    NONE = "none"
    # A named function (Chat Completions `{"type": "function", "function": {"name"}}`).
    NAMED = "named"
    # A named function in the request-level shape (legacy `function_call: {"name"}`,
    # Responses `{"type": "function", "name"}`): no API-confirmed count.
    NAMED_LEGACY = "named_legacy"
    # Anything else (`required`, a built-in tool choice): no published cost.
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class ToolChoice:
    kind: ToolChoiceKind = ToolChoiceKind.AUTO
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ToolSet:
    """A request's tools and its tool choice."""

    definitions: tuple[ToolDefinition, ...] = ()
    choice: ToolChoice = ToolChoice()

    def __bool__(self) -> bool:
        return bool(self.definitions)
