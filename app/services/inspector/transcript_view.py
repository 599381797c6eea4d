"""Transcript entries as a reader sees them: who spoke, and each piece of what they sent."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from app.engine.errors import InvalidHistoryError
from app.engine.messages import Block, BlockKind
from app.formats.protocol import WireFormat

# Longer texts show this much first; the rest sits behind a disclosure (no script needed).
PREVIEW_CHARS = 1_500

EntryState = Literal["prefix", "folded", "kept"]


@dataclass(frozen=True, slots=True)
class EntryPart:
    """One piece of a message: its kind, a label for a person, and its text."""

    kind: str
    label: str
    text: str
    is_error: bool = False

    @property
    def preview(self) -> str:
        return self.text[:PREVIEW_CHARS]

    @property
    def rest(self) -> str:
        return self.text[PREVIEW_CHARS:]


@dataclass(frozen=True, slots=True)
class EntryView:
    seq: int
    role: str
    parts: tuple[EntryPart, ...]
    tokens: int
    state: EntryState
    # The compaction whose summary folded this entry in (for `folded` entries).
    folded_by: int | None = None


def entry_parts(wire: WireFormat, raw: Any, seq: int) -> tuple[str, tuple[EntryPart, ...]]:
    """The role and pieces of one stored message; unreadable ones show their JSON."""
    try:
        message = wire.parse_message(raw, f"transcript[{seq}]")
    except InvalidHistoryError:
        text = json.dumps(raw, indent=2, ensure_ascii=False, default=str)
        return "unknown", (EntryPart("other", "stored message", text),)
    return message.role.value, tuple(_part(block) for block in message.blocks)


def _part(block: Block) -> EntryPart:
    kind = block.kind
    if kind is BlockKind.TOOL_CALL:
        label = f"tool call {block.tool_name or 'tool'} · {block.tool_call_id or ''}"
        return EntryPart(kind.value, label.strip(" ·"), _readable_arguments(block.arguments))
    if kind is BlockKind.TOOL_RESULT:
        label = f"tool result · {block.tool_call_id or ''}".strip(" ·")
        if block.is_error:
            label += " (error)"
        return EntryPart(kind.value, label, block.text, is_error=block.is_error)
    if kind is BlockKind.IMAGE:
        size = ""
        if block.image is not None and block.image.width and block.image.height:
            size = f" {block.image.width}×{block.image.height}"
        return EntryPart(kind.value, f"image{size}", "")
    if kind in (BlockKind.THINKING, BlockKind.REDACTED_THINKING):
        return EntryPart(kind.value, kind.value.replace("_", " "), block.text)
    if kind is BlockKind.TEXT:
        return EntryPart(kind.value, "text", block.text)
    return EntryPart(kind.value, kind.value, block.text)


def _readable_arguments(arguments: str) -> str:
    """Tool-call arguments indented when they are JSON, as the model wrote them if not."""
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments
