"""The summary marker: how a summary message is written and recognized.

Besides our own marker, summaries written by other agents are recognized from a list of
patterns, so a history compacted elsewhere takes the update path instead of having its
summary summarized as if it were the user's goal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from app.engine.messages import BlockKind, Message, Role

SUMMARY_MARKER_PREFIX = "[Context summary"
SUMMARY_MARKER = "[Context summary: the conversation before this point was compacted]"
_MARKER_END = "]\n\n"

# How other agents open the message that carries their summary (matched at the start of
# the text, leading whitespace ignored); the summary is what follows.
FOREIGN_SUMMARY_PATTERNS: tuple[str, ...] = (
    # pi coding agent: the summary follows inside <summary> tags.
    r"The conversation history before this point was compacted into the following summary:",
    # LangChain's SummarizationMiddleware (default summary prefix).
    r"Here is a summary of the conversation to date:",
    # Claude Code after (auto-)compaction; the first sentence is fixed, the second has
    # had several wordings ("The conversation is summarized below:", "The summary below
    # covers the earlier portion of the conversation.").
    r"This session is being continued from a previous conversation that ran out of "
    r"context\.[^\n]*\n",
)
# The one line a session's summary message ends with when recall over MCP is on (SPEC
# §17): the agent learns that nothing was deleted, and how to look it up.
RECALL_LINE_PREFIX = "[Full history searchable:"
RECALL_LINE = (
    RECALL_LINE_PREFIX + " nothing was deleted; call the MCP tool search_history with "
    'session_id "{session_id}" to find what this summary left out]'
)
_SUMMARY_TAGS = re.compile(r"\A<summary>\s*(.*?)\s*</summary>\s*\Z", re.DOTALL)


@dataclass(frozen=True, slots=True)
class SummaryMarker:
    """Renders our summary messages and recognizes ours and other agents'."""

    line: str = SUMMARY_MARKER
    foreign_patterns: tuple[str, ...] = FOREIGN_SUMMARY_PATTERNS
    # A session's summary message ends with the recall line (on while MCP is served).
    recall_hint: bool = False
    _compiled: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled = tuple(re.compile(p) for p in self.foreign_patterns)
        object.__setattr__(self, "_compiled", compiled)

    def render(self, summary: str, recall_session: str | None = None) -> str:
        """Marker line, a blank line, then the summary; with `recall_session`, a last line
        saying that session's full history can be searched."""
        text = f"{self.line}\n\n{summary.strip()}"
        if recall_session is not None:
            text += "\n\n" + RECALL_LINE.format(session_id=recall_session)
        return text

    @staticmethod
    def parse(text: str) -> str | None:
        """The summary body when `text` is one of our summary messages, else None."""
        if not text.startswith(SUMMARY_MARKER_PREFIX):
            return None
        end = text.find(_MARKER_END)
        if end == -1:
            return None
        body = text[end + len(_MARKER_END) :]
        # The recall line is ours, not part of the summary an update starts from.
        recall = body.rfind("\n\n" + RECALL_LINE_PREFIX)
        return body[:recall] if recall != -1 and "\n" not in body[recall + 2 :] else body

    def parse_any(self, text: str) -> str | None:
        """The summary body of our marker or of another agent's summary message."""
        ours = self.parse(text)
        if ours is not None:
            return ours
        stripped = text.lstrip()
        for pattern in self._compiled:
            found = pattern.match(stripped)
            if found:
                body = stripped[found.end() :].strip()
                tagged = _SUMMARY_TAGS.match(body)
                body = tagged.group(1) if tagged else body
                return body or None
        return None

    def previous_summary(self, message: Message) -> str | None:
        """The previous summary carried by `message`, if it is a summary message.

        Only a user message made of text (no tool results, images or calls) qualifies, as
        in the design chapter: a marker quoted inside a tool output is not a summary.
        """
        if message.role is not Role.USER or not message.blocks:
            return None
        if any(b.kind is not BlockKind.TEXT for b in message.blocks):
            return None
        text = message.blocks[0].text if len(message.blocks) == 1 else message.text
        return self.parse_any(text)


DEFAULT_MARKER = SummaryMarker()
