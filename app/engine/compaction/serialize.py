"""Role-labelled text of the messages to summarize (SPEC §5.3)."""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.messages import Block, BlockKind, Message, Role

DEFAULT_TOOL_RESULT_LIMIT = 2000


def serialize_for_summary(
    messages: Sequence[Message], tool_result_limit: int = DEFAULT_TOOL_RESULT_LIMIT
) -> str:
    """Plain text a summarizer can read: who said what, which tools ran, what came back."""
    lines: list[str] = []
    names: dict[str, str] = {}
    for message in messages:
        for block in message.blocks:
            if block.kind is BlockKind.TOOL_CALL and block.tool_call_id:
                names[block.tool_call_id] = block.tool_name or "tool"
            rendered = _render_block(message.role, block, names, tool_result_limit)
            if rendered:
                lines.append(rendered)
    return "\n\n".join(lines)


def _render_block(role: Role, block: Block, names: dict[str, str], limit: int) -> str:
    kind = block.kind
    speaker = "User" if role is Role.USER else "Assistant" if role is Role.ASSISTANT else "Tool"
    if role is Role.SYSTEM:
        speaker = "System"
    if kind is BlockKind.TEXT:
        return f"[{speaker}]: {block.text}" if block.text.strip() else ""
    if kind is BlockKind.THINKING:
        return f"[Assistant thinking]: {block.text}" if block.text.strip() else ""
    if kind is BlockKind.REDACTED_THINKING:
        return "[Assistant thinking]: (redacted)"
    if kind is BlockKind.TOOL_CALL:
        return f"[Assistant tool call]: {block.tool_name}({block.arguments})"
    if kind is BlockKind.TOOL_RESULT:
        name = names.get(block.tool_call_id or "", "tool")
        label = f"[Tool result: {name}{' (error)' if block.is_error else ''}]"
        return f"{label}: {truncate_tool_result(block.text, limit)}"
    if kind is BlockKind.IMAGE:
        return f"[{speaker}]: [image]"
    if kind is BlockKind.DOCUMENT:
        return f"[{speaker}]: [document] {block.text[:limit]}".rstrip()
    return f"[{speaker}]: {block.text[:limit]}" if block.text else ""


def truncate_tool_result(text: str, limit: int) -> str:
    """The first `limit` characters, with a note of how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters truncated]"
