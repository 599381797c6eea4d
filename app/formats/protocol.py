"""The one interface every wire format implements (SPEC §2).

A wire format translates a provider's request shape to the engine's normalized messages
and back. Engine and services only ever see this Protocol (through the registry in
`app.formats.registry`); adding a format is one module plus one registry line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from app.engine.clearing import ClearedToolUse
from app.engine.counting.accounting import CountingDialect
from app.engine.messages import Conversation, Message
from app.engine.tools import ToolSet


class WireFormat(Protocol):
    """A provider's history shape ↔ engine messages. Pure: no I/O."""

    @property
    def name(self) -> str:
        """The `format` value callers send (`openai`, `anthropic`, …)."""
        ...

    @property
    def dialect(self) -> CountingDialect:
        """How requests in this format are counted."""
        ...

    @property
    def top_level_system_is_evidence(self) -> bool:
        """A top-level `system` field proves this format (when no message proves another)."""
        ...

    def parse(
        self, messages: Sequence[Any], system: Any = None, tools: ToolSet = ToolSet()
    ) -> Conversation:
        """A whole request: system prompt, messages and (normalized) tools."""
        ...

    def parse_tools(self, tools: Sequence[Any], fields: Mapping[str, Any]) -> ToolSet:
        """The request's tool definitions and tool choice: `tools` as sent, and the
        request's other tool fields (`fields`, e.g. legacy `functions`, `tool_choice`)."""
        ...

    def first_system_text(self, raws: Sequence[Any], system: Any) -> str | None:
        """The request's first system text (top-level or the first inline system
        message), None when it has none."""
        ...

    def parse_message(self, raw: Any, where: str) -> Message:
        """One wire message; raises InvalidHistoryError naming the bad field at `where`."""
        ...

    def proves(self, raw: Any) -> bool:
        """True when `raw` can only be a message of this format (block types, fields)."""
        ...

    def leading_system_count(self, raws: Sequence[Any]) -> int:
        """How many of the first wire messages are inline system-prompt messages."""
        ...

    def system_text(self, system: Any) -> str:
        """The top-level system prompt as text."""
        ...

    def summary_message(self, text: str) -> dict[str, Any]:
        """The wire object of a summary message with `text`."""
        ...

    def apply_cleared(self, raws: Sequence[Any], cleared: Sequence[ClearedToolUse]) -> list[Any]:
        """`raws` with each cleared tool use's result (and input) replaced; unchanged
        messages are the very same objects, changed ones are copies."""
        ...
