"""The summary marker: how a summary message is written and recognized."""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.messages import BlockKind, Message, Role

SUMMARY_MARKER_PREFIX = "[Context summary"
SUMMARY_MARKER = "[Context summary: the conversation before this point was compacted]"
_MARKER_END = "]\n\n"


@dataclass(frozen=True, slots=True)
class SummaryMarker:
    """Renders and parses the text of a summary message."""

    line: str = SUMMARY_MARKER

    def render(self, summary: str) -> str:
        """Marker line, a blank line, then the summary."""
        return f"{self.line}\n\n{summary.strip()}"

    @staticmethod
    def parse(text: str) -> str | None:
        """The summary body when `text` is a summary message's text, else None."""
        if not text.startswith(SUMMARY_MARKER_PREFIX):
            return None
        end = text.find(_MARKER_END)
        if end == -1:
            return None
        return text[end + len(_MARKER_END) :]


def previous_summary_of(message: Message) -> str | None:
    """The previous summary carried by `message`, if it is a summary message.

    Only a user message made of text (no tool results, images or calls) qualifies, as in
    the design chapter: a marker quoted inside a tool output is not a summary.
    """
    if message.role is not Role.USER or not message.blocks:
        return None
    if any(b.kind is not BlockKind.TEXT for b in message.blocks):
        return None
    return SummaryMarker.parse(message.blocks[0].text if len(message.blocks) == 1 else message.text)
