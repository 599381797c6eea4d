"""What the extractive summarizer reads out of the messages being folded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.engine.extractive.text import (
    clean_user_text,
    constraint_sentences,
    decision_sentences,
    error_lines,
    failed_exit,
    intent_of,
    last_meaningful_line,
)
from app.engine.extractive.tools import ToolCallSummary, describe_tool_call
from app.engine.messages import Block, BlockKind, Message, Role

# Claude Code opens a resumed session with its own summary in a user turn; those are not
# the user's words, so they set no constraints.
_CARRIED_SUMMARY_OPENING = "This session is being continued from a previous conversation"


@dataclass(frozen=True, slots=True)
class TranscriptFacts:
    """Facts from the folded messages, each list oldest first."""

    user_requests: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    actions: tuple[str, ...] = ()
    files_read: tuple[str, ...] = ()
    files_modified: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    saw_tool_result: bool = False
    # The error of the last tool result, when that result was a failure.
    last_result_error: str | None = None
    last_intent: str | None = None
    # The latest user request when no assistant text came after it.
    unanswered_request: str | None = None


@dataclass(slots=True)
class _Reader:
    """Accumulates facts while walking the messages once, oldest first."""

    requests: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    calls: dict[str, ToolCallSummary] = field(default_factory=dict)
    saw_tool_result: bool = False
    last_result_error: str | None = None
    last_intent: str | None = None
    unanswered_request: str | None = None

    def read_user_text(self, text: str) -> None:
        text = clean_user_text(text)
        if not text or text.startswith(SUMMARY_MARKER_PREFIX):
            return
        self.requests.append(text)
        self.unanswered_request = text
        if not text.startswith(_CARRIED_SUMMARY_OPENING):
            self.constraints.extend(constraint_sentences(text))

    def read_assistant_text(self, text: str) -> None:
        if not text.strip():
            return
        self.decisions.extend(decision_sentences(text))
        self.last_intent = intent_of(text) or self.last_intent
        self.unanswered_request = None

    def read_tool_call(self, block: Block) -> None:
        summary = describe_tool_call(block.tool_name, block.arguments)
        if block.tool_call_id:
            self.calls[block.tool_call_id] = summary
        if summary.action:
            self.actions.append(summary.action)
        self.files_read.extend(summary.files_read)
        self.files_modified.extend(summary.files_modified)

    def read_tool_result(self, block: Block) -> None:
        call = self.calls.get(block.tool_call_id or "")
        shows_content = call is not None and call.shows_content and not block.is_error
        found = error_lines(block.text, head_only=shows_content)
        failed = block.is_error or (failed_exit(block.text) and not shows_content)
        if failed and not found:
            found = [line for line in [last_meaningful_line(block.text)] if line]
        self.saw_tool_result = True
        self.errors.extend(found)
        if found:
            self.last_result_error = found[-1]
        else:
            self.last_result_error = (
                "the last tool call failed without a message" if failed else None
            )

    def facts(self) -> TranscriptFacts:
        return TranscriptFacts(
            user_requests=tuple(self.requests),
            constraints=tuple(self.constraints),
            actions=tuple(self.actions),
            files_read=tuple(self.files_read),
            files_modified=tuple(self.files_modified),
            errors=tuple(self.errors),
            decisions=tuple(self.decisions),
            saw_tool_result=self.saw_tool_result,
            last_result_error=self.last_result_error,
            last_intent=self.last_intent,
            unanswered_request=self.unanswered_request,
        )


def read_transcript(messages: Sequence[Message]) -> TranscriptFacts:
    """The facts a summary keeps from `messages`; images and thinking are ignored."""
    reader = _Reader()
    for message in messages:
        if message.role is Role.SYSTEM:
            continue
        # `Message.text` joins only text blocks: tool output never counts as user words.
        if message.role is Role.USER:
            reader.read_user_text(message.text)
        elif message.role is Role.ASSISTANT:
            reader.read_assistant_text(message.text)
        for block in message.blocks:
            if block.kind is BlockKind.TOOL_CALL:
                reader.read_tool_call(block)
            elif block.kind is BlockKind.TOOL_RESULT:
                reader.read_tool_result(block)
    return reader.facts()
