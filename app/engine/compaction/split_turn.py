"""Split turns: when the cut falls inside a turn, the summary quotes the turn's request.

A turn is a user request and the assistant messages and tool results that answer it.
When the kept tail starts with an assistant message, the request it answers was folded
into the summary; the summary then ends with a `## Current Request` section quoting it
(unless the summary already holds it word for word), so the kept tail is never an answer
without its question. A turn longer than one compaction keeps the request quoted by the
previous summary.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.engine.compaction.summary_edit import remove_section, section_body
from app.engine.extractive.sections import parse_summary
from app.engine.extractive.text import cap_with_note, clean_user_text, one_line
from app.engine.extractive.text_agents import is_observation, text_actions, without_demonstrations
from app.engine.extractive.transcript import opening_goal_text
from app.engine.messages import Message, Role

CURRENT_REQUEST_HEADING = "## Current Request"
_WORDS = ("current request",)
_INTRO = "The messages kept after this summary continue the work on this user request:"
_MAX_REQUEST_CHARS = 2_000
_ALREADY_QUOTED_PROBE = 200


def split_turn_request(
    to_summarize: Sequence[Message], kept: Sequence[Message], previous_summary: str | None
) -> str | None:
    """The request of the turn the cut falls inside, or None when the cut is between turns."""
    history = [*to_summarize, *kept]
    if not kept or _starts_turn(history, len(to_summarize)):
        return None
    for index in range(len(to_summarize) - 1, -1, -1):
        if not _starts_turn(history, index):
            continue
        text = without_demonstrations(clean_user_text(history[index].text)).strip()
        if text and not text.startswith(SUMMARY_MARKER_PREFIX):
            return cap_with_note(text, _MAX_REQUEST_CHARS)
    return _quoted_request(previous_summary) if previous_summary else None


def with_current_request(summary: str, request: str | None) -> str:
    """`summary` with at most one Current Request section, quoting `request` unless the
    summary already holds it (as the extractive Goal does for the task)."""
    summary = remove_section(summary, _WORDS)
    # Summaries cap what they quote (the extractive Goal at its token budget, without
    # markup-only lines), so a request whose opening words are already there, in either
    # form, counts as held; quoting it again would only make the summary longer.
    if request is None:
        return summary
    held = one_line(summary)
    forms = (request, opening_goal_text(request))
    if any(one_line(form)[:_ALREADY_QUOTED_PROBE] in held for form in forms):
        return summary
    quoted = "\n".join(f"> {line}".rstrip() for line in request.splitlines())
    return f"{summary}\n\n{CURRENT_REQUEST_HEADING}\n{_INTRO}\n{quoted}"


def _starts_turn(history: Sequence[Message], index: int) -> bool:
    """A user message that is the user's: not a tool result, and not the observation a
    text-action agent gets back as `user` after an action in the message before."""
    message = history[index]
    if message.role is not Role.USER or message.is_tool_result or not message.text.strip():
        return False
    before = history[index - 1] if index else None
    actions = (
        text_actions(before.text) if before is not None and before.role is Role.ASSISTANT else []
    )
    return not is_observation(message.text, actions)


def _quoted_request(summary: str) -> str | None:
    body = section_body(summary, _WORDS)
    if not body:
        # Not quoted because the summary held it: the Goal ends with the latest request.
        goals = parse_summary(summary).goals
        return goals[-1] if goals else None
    lines = body.splitlines()
    quoted = [line[2:] if line.startswith("> ") else line[1:] for line in lines if line[:1] == ">"]
    text = "\n".join(quoted).strip() or "\n".join(lines[1:] if lines[0] == _INTRO else lines)
    return text.strip() or None
