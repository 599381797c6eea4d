"""What the extractive summarizer reads out of the messages being folded.

User messages are read as the user's words only when they are: tool output that
text-action agents send as `user` (observations) is read as tool output, in-context
demonstrations are dropped, and a continuation summary another agent left mid-history is
read as a previous summary, not as a request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from app.engine.compaction.marker import DEFAULT_MARKER, SUMMARY_MARKER_PREFIX
from app.engine.extractive.budget import cap_tokens
from app.engine.extractive.errors import error_lines, failed_exit, failure_line
from app.engine.extractive.foreign import read_foreign_summary
from app.engine.extractive.plans import decisions, plan_steps
from app.engine.extractive.sections import SummarySections
from app.engine.extractive.statements import (
    Act,
    Statement,
    addressed_statements,
    bounds_the_work,
    classify,
    statements,
)
from app.engine.extractive.text import cap, clean_user_text, one_line, sentence_lines
from app.engine.extractive.text_agents import (
    TextAction,
    is_observation,
    open_file_of,
    text_actions,
    without_demonstrations,
)
from app.engine.extractive.tools import ToolCallSummary, describe_tool_call
from app.engine.extractive.updates import states_new_value
from app.engine.messages import Block, BlockKind, Message, Role

GOAL_TOKENS = 400
_REQUEST_CHARS = 300
_FUNCTION_BLOCK = re.compile(r"<function=[\w.-]+>.*?(?:</function>|\Z)", re.DOTALL)
_FINAL_FENCE = re.compile(r"```[\w-]*\n.*?```\s*\Z", re.DOTALL)
_BLANK_RUN = re.compile(r"\n{3,}")
_TAG_ONLY = re.compile(r"^\s*(?:</?[a-z][\w-]*>\s*)+$")
_DECORATION = re.compile(r"^\s*[-=*_~#]{3,}.*$|^\s*$")


class ItemKind(StrEnum):
    RULE = "rule"
    FACT = "fact"
    REQUEST = "request"


@dataclass(frozen=True, slots=True)
class UserItem:
    """One thing the user said that a summary keeps, in the order it was said."""

    kind: ItemKind
    text: str
    # Which user message said it (0 for the first one read): a statement only replaces
    # what an earlier message said, never a sentence beside it.
    message: int = 0
    # Said in the opening request: kept in the Goal's own text when it becomes the Goal.
    in_opening: bool = False
    # A rule of the opening request that the Goal's text keeps as well (one found by its
    # words alone): not repeated under Constraints when the opening becomes the Goal.
    in_goal_text: bool = False


@dataclass(frozen=True, slots=True)
class Opening:
    """The first request of these messages: the Goal's text, or a later request."""

    goal: str
    # Its request sentences, when it has any (the Goal keeps the whole text).
    request: str | None


@dataclass(frozen=True, slots=True)
class TranscriptFacts:
    """Facts from the folded messages, each list oldest first."""

    opening: Opening | None = None
    user_items: tuple[UserItem, ...] = ()
    # Summaries other agents left inside the folded messages, read into our sections.
    carried: tuple[SummarySections, ...] = ()
    actions: tuple[str, ...] = ()
    files_read: tuple[str, ...] = ()
    files_modified: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    saw_tool_result: bool = False
    # The error of the last tool result, when that result was a failure.
    last_result_error: str | None = None
    # What the assistant last said it will do, and its todo list (Claude Code's TodoWrite).
    plan: tuple[str, ...] = ()
    todos_in_progress: tuple[str, ...] = ()
    todos_pending: tuple[str, ...] = ()
    # The latest user request when no assistant text came after it.
    unanswered_request: str | None = None


@dataclass(slots=True)
class _Reader:
    """Accumulates facts while walking the messages once, oldest first."""

    opening: Opening | None = None
    items: list[UserItem] = field(default_factory=list)
    carried: list[SummarySections] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    calls: dict[str, ToolCallSummary] = field(default_factory=dict)
    # Text actions of the last assistant message, waiting for their observation.
    pending: list[tuple[TextAction, ToolCallSummary]] = field(default_factory=list)
    open_file: str | None = None
    saw_tool_result: bool = False
    last_result_error: str | None = None
    plan: list[str] = field(default_factory=list)
    todos: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    unanswered_request: str | None = None
    user_messages: int = 0

    def read_user_text(self, text: str) -> None:
        if self.pending and is_observation(text, [a for a, _ in self.pending]):
            self.read_observation(text)
            return
        self.pending = []
        if is_observation(text, []):
            self.read_observation(text)
            return
        text = clean_user_text(text)
        if not text or text.startswith(SUMMARY_MARKER_PREFIX):
            return
        carried = DEFAULT_MARKER.parse_any(text)
        if carried is not None:
            # Another agent's continuation summary: its facts, not the user's request.
            self.carried.append(read_foreign_summary(carried))
            return
        words = without_demonstrations(text).strip()
        if not words:
            return
        found = addressed_statements(words)
        self.user_messages += 1
        if self.opening is None:
            if all(s.act is Act.CHATTER for s in found):
                return
            self._read_opening(words, found)
        else:
            self._read_later(words, found)

    def _read_opening(self, words: str, found: list[Statement]) -> None:
        goal = cap_tokens(opening_goal_text(words, found), GOAL_TOKENS)
        requests = _requests_of(found)
        self.opening = Opening(goal, cap(one_line(requests), _REQUEST_CHARS) if requests else None)
        self.unanswered_request = cap(one_line(requests or words), _REQUEST_CHARS)
        for statement in found:
            if _is_rule(statement):
                item = self._item(ItemKind.RULE, statement.text, in_opening=True)
                if _rule_by_words_only(statement):
                    item = replace(item, in_goal_text=True)
                self.items.append(item)
            elif statement.act is Act.FACT:
                self.items.append(self._item(ItemKind.FACT, statement.text, in_opening=True))

    def _item(self, kind: ItemKind, text: str, in_opening: bool = False) -> UserItem:
        return UserItem(kind, text, self.user_messages, in_opening)

    def _read_later(self, words: str, found: list[Statement]) -> None:
        request = _requests_of(found)
        if request:
            self.items.append(self._item(ItemKind.REQUEST, cap(one_line(request), _REQUEST_CHARS)))
        for statement in found:
            if _is_rule(statement):
                self.items.append(self._item(ItemKind.RULE, statement.text))
            elif statement.act is Act.FACT or (
                statement.act is Act.CHATTER and states_new_value(statement.text)
            ):
                # "The serialization library: structlog (was orjson)" reads as chatter by
                # its form (no value `values_in` knows, few words); it changes a value.
                self.items.append(self._item(ItemKind.FACT, statement.text))
        if any(s.act is not Act.CHATTER for s in found):
            self.unanswered_request = cap(one_line(words), _REQUEST_CHARS)

    def read_assistant_text(self, text: str) -> None:
        self.pending = []
        actions = text_actions(text)
        prose = _FINAL_FENCE.sub("", _FUNCTION_BLOCK.sub("", text)) if actions else text
        for action in actions:
            self._read_action(action)
        if not prose.strip():
            return
        self.decisions.extend(decisions(prose))
        steps = plan_steps(prose)
        if steps:
            self.plan = steps
        self.unanswered_request = None

    def _read_action(self, action: TextAction) -> None:
        summary = describe_tool_call(action.name, action.arguments, self.open_file)
        self._record(summary)
        self.pending.append((action, summary))
        touched = (*summary.files_modified, *summary.files_read)
        if action.name in ("create", "open") and touched:
            self.open_file = touched[0]

    def _record(self, summary: ToolCallSummary) -> None:
        if summary.action:
            self.actions.append(summary.action)
        self.files_read.extend(summary.files_read)
        self.files_modified.extend(summary.files_modified)

    def read_tool_call(self, block: Block) -> None:
        summary = describe_tool_call(block.tool_name, block.arguments, self.open_file)
        if block.tool_call_id:
            self.calls[block.tool_call_id] = summary
        self._record(summary)
        name = (block.tool_name or "").rsplit("__", 1)[-1].casefold()
        if name == "todowrite":
            self.todos = _todos(block.arguments) or self.todos
        elif name in ("open", "create") and (summary.files_read or summary.files_modified):
            self.open_file = (*summary.files_modified, *summary.files_read)[0]

    def read_tool_result(self, block: Block) -> None:
        call = self.calls.get(block.tool_call_id or "")
        self._read_output(block.text, call, block.is_error)

    def read_observation(self, text: str) -> None:
        call = self.pending[-1][1] if self.pending else None
        self.pending = []
        self.open_file = open_file_of(text) or self.open_file
        self._read_output(text, call, False)

    def _read_output(self, text: str, call: ToolCallSummary | None, is_error: bool) -> None:
        shows_content = call is not None and call.shows_content and not is_error
        found = error_lines(text, head_only=shows_content)
        failed = is_error or (failed_exit(text) and not shows_content)
        if failed and not found:
            found = [line for line in [failure_line(text)] if line]
        self.saw_tool_result = True
        self.errors.extend(found)
        if found:
            self.last_result_error = found[-1]
        else:
            self.last_result_error = (
                "the last tool call failed without a message" if failed else None
            )

    def facts(self) -> TranscriptFacts:
        in_progress, pending = self.todos or ((), ())
        return TranscriptFacts(
            opening=self.opening,
            user_items=tuple(self.items),
            carried=tuple(self.carried),
            actions=tuple(self.actions),
            files_read=tuple(self.files_read),
            files_modified=tuple(self.files_modified),
            errors=tuple(self.errors),
            decisions=tuple(self.decisions),
            saw_tool_result=self.saw_tool_result,
            last_result_error=self.last_result_error,
            plan=tuple(self.plan),
            todos_in_progress=in_progress,
            todos_pending=pending,
            unanswered_request=self.unanswered_request,
        )


def _is_rule(statement: Statement) -> bool:
    if statement.act in (Act.RULE, Act.PREFERENCE):
        return True
    return statement.act is Act.REQUEST and bounds_the_work(statement.text)


def _rule_by_words_only(statement: Statement) -> bool:
    """Whether a rule is one by its words alone (`classify`'s last resort): in the opening
    request it stays in the Goal's quote of it, not also under Constraints."""
    rule_like = (Act.RULE, Act.PREFERENCE)
    return statement.act in rule_like and classify(statement.text, False) not in rule_like


def opening_goal_text(words: str, found: list[Statement] | None = None) -> str:
    """The opening request as the Goal shows it (uncapped): `words` without markup-only
    lines, decoration, and lines that only state rules (those are under Constraints)."""
    said = statements(words) if found is None else found
    # A line read as a rule by its words alone stays in the Goal: the request may be in it.
    rules = {
        s.text for s in said if s.act in (Act.RULE, Act.PREFERENCE) and not _rule_by_words_only(s)
    }
    return _goal_text(words, rules) or words


def _requests_of(found: list[Statement]) -> str:
    return " ".join(s.text for s in found if s.act is Act.REQUEST)


def _goal_text(words: str, rules: set[str]) -> str:
    """The opening request as the Goal shows it: its lines, without markup-only lines,
    decoration, and lines that only state rules (those are under Constraints)."""
    kept: list[str] = []
    in_code = False
    for line in words.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            kept.append(line)
            continue
        if in_code:
            kept.append(line)
            continue
        if _TAG_ONLY.match(line) or (_DECORATION.match(line) and line.strip()):
            continue
        said = [s for group in sentence_lines(line) for s in group]
        is_rule = [any(s in rule for rule in rules) for s in said]
        if said and all(is_rule):
            continue
        if any(is_rule):
            # A request and its rules on one line: the rules are under Constraints.
            line = " ".join(s for s, rule in zip(said, is_rule, strict=True) if not rule)
        kept.append(line.rstrip())
    return _BLANK_RUN.sub("\n\n", "\n".join(kept)).strip()


def _todos(arguments: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    try:
        todos = json.loads(arguments).get("todos")
    except (ValueError, AttributeError):
        return None
    if not isinstance(todos, list):
        return None

    def of(status: str) -> tuple[str, ...]:
        return tuple(
            cap(one_line(str(t.get("content", ""))), 200)
            for t in todos
            if isinstance(t, dict) and t.get("status") == status and t.get("content")
        )

    return of("in_progress"), of("pending")


def read_transcript(messages: Sequence[Message]) -> TranscriptFacts:
    """The facts a summary keeps from `messages`; images and thinking are ignored."""
    reader = _Reader()
    for message in messages:
        if message.role is Role.SYSTEM:
            continue
        # `Message.text` joins only text blocks: tool output never counts as user words.
        if message.role is Role.USER and message.text.strip():
            reader.read_user_text(message.text)
        elif message.role is Role.ASSISTANT:
            reader.read_assistant_text(message.text)
        for block in message.blocks:
            if block.kind is BlockKind.TOOL_CALL:
                reader.read_tool_call(block)
            elif block.kind is BlockKind.TOOL_RESULT:
                reader.read_tool_result(block)
    return reader.facts()
