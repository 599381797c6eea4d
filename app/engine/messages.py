"""The normalized message model both wire formats map onto."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.engine.tools import ToolSet


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class BlockKind(StrEnum):
    TEXT = "text"
    IMAGE = "image"
    DOCUMENT = "document"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    THINKING = "thinking"
    REDACTED_THINKING = "redacted_thinking"
    # A block type the service does not understand; it is carried, never dropped.
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """What is known about an image: pixel size when the data allowed reading it."""

    width: int | None = None
    height: int | None = None
    detail: str | None = None  # OpenAI's "low" | "high" | "auto"


@dataclass(frozen=True, slots=True)
class Block:
    """One ordered piece of a message's content."""

    kind: BlockKind
    text: str = ""
    tool_call_id: str | None = None
    tool_name: str | None = None
    # Tool-call arguments as the JSON text the model produced.
    arguments: str = ""
    is_error: bool = False
    image: ImageInfo | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """A message as the engine sees it; `raw` is the wire object, returned unchanged."""

    role: Role
    blocks: tuple[Block, ...]
    raw: Any = field(default=None, compare=False, repr=False)
    name: str | None = None
    # Belongs with the message after it and never stands alone at a cut (a Responses
    # `reasoning` item travels with the call or message it led to).
    binds_to_next: bool = False

    @property
    def is_tool_result(self) -> bool:
        """True when the message carries any tool result (SPEC §2)."""
        return self.role is Role.TOOL or any(b.kind is BlockKind.TOOL_RESULT for b in self.blocks)

    @property
    def is_valid_cut_point(self) -> bool:
        """A kept tail may start here: a user or assistant message with no tool result.

        A message bound to the next one is judged with it by the cut-point search."""
        return self.role in (Role.USER, Role.ASSISTANT) and not self.is_tool_result

    @property
    def tool_call_ids(self) -> tuple[str, ...]:
        return tuple(
            b.tool_call_id for b in self.blocks if b.kind is BlockKind.TOOL_CALL and b.tool_call_id
        )

    @property
    def tool_result_ids(self) -> tuple[str, ...]:
        return tuple(
            b.tool_call_id
            for b in self.blocks
            if b.kind is BlockKind.TOOL_RESULT and b.tool_call_id
        )

    @property
    def text(self) -> str:
        """The plain text blocks joined; what a reader would call the message's words."""
        return "\n".join(b.text for b in self.blocks if b.kind is BlockKind.TEXT and b.text)


@dataclass(frozen=True, slots=True)
class Conversation:
    """A normalized request: system prompt, history and tool definitions."""

    format: str
    system: tuple[Message, ...]
    messages: tuple[Message, ...]
    tools: ToolSet = field(default_factory=ToolSet)
    # Leading system messages inline in `messages` (OpenAI): how many there were.
    inline_system_count: int = 0
