"""The default summarizer (SPEC §5.8): offline, deterministic, built from the transcript.

It fills the SPEC §5.4 sections from the messages themselves and merges them into the
previous summary, so constraints, file paths and the newest errors survive any number of
compactions. Every section is capped, which keeps the summary far smaller than the history.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from app.engine.compaction.marker import SummaryMarker
from app.engine.extractive.sections import (
    DoneAction,
    SummarySections,
    parse_summary,
    render_summary,
)
from app.engine.extractive.text import (
    cap,
    cap_with_note,
    code_span,
    identity_key,
    is_substantive,
    one_line,
)
from app.engine.extractive.transcript import TranscriptFacts, read_transcript
from app.engine.messages import Message
from app.engine.ports import SummarizerInfo, SummaryRequest, SummaryResult

_INFO = SummarizerInfo(
    provider="extractive",
    model="extractive-v1",
    context_window=None,
    max_output_tokens=None,
    thinking_levels=(),
)

_FIRST_GOAL_CHARS = 1500
_LATER_GOAL_CHARS = 300
_MAX_EARLY_GOALS = 3
_MAX_LATER_GOALS = 6
MAX_CONSTRAINTS = 40
_MAX_DONE = 30
_MAX_NEW_DECISIONS = 5
_MAX_DECISIONS = 8
MAX_FILES = 100
MAX_ERRORS = 5
_MAX_CONTEXT_LINES = 30
_MAX_STEPS = 6
_RESOLVE_STEP = "Resolve the latest error:"
_REQUEST_STEP = "Continue with the latest user request:"
_FOCUS_CHARS = 500


class ExtractiveSummarizer:
    """A `Summarizer` that needs no model: it extracts the summary from the messages."""

    @property
    def info(self) -> SummarizerInfo:
        """Provider "extractive": no context window, no output limit, no thinking."""
        return _INFO

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Summarize `request.messages`, merged into `request.previous_summary` if given."""
        # Reading a long transcript is CPU work: a worker thread keeps the event loop free.
        text = await asyncio.to_thread(
            extractive_summary, request.messages, request.previous_summary, request.instructions
        )
        return SummaryResult(text=text, truncated=False)


def extractive_summary(
    messages: Sequence[Message], previous_summary: str | None, instructions: str | None
) -> str:
    """The summary markdown of `messages`, updating `previous_summary` when there is one."""
    if previous_summary:
        # Tolerate being handed the whole summary message: the marker line is not content.
        body = SummaryMarker.parse(previous_summary) or previous_summary
        previous = parse_summary(body)
        if previous == SummarySections() and body.strip():
            previous = _foreign_summary(body)
    else:
        previous = SummarySections()
    facts = read_transcript(messages)
    return render_summary(_merged(previous, facts, instructions))


def _foreign_summary(body: str) -> SummarySections:
    """A summary in another agent's layout (no sections of ours): its lines are kept as
    critical context, so an update never drops what the other agent wrote."""
    lines = [one_line(line) for line in body.splitlines() if is_substantive(line)]
    kept = SummarySections(context=tuple(lines[:_MAX_CONTEXT_LINES]))
    # Read back as our own summary would be, so a second update changes nothing.
    return parse_summary(render_summary(kept))


def _merged(
    previous: SummarySections, facts: TranscriptFacts, instructions: str | None
) -> SummarySections:
    done, done_merged = _merged_done(previous.done, previous.done_merged, facts.actions)
    new_decisions = list(reversed(facts.decisions))[:_MAX_NEW_DECISIONS]
    focus = cap(one_line(instructions), _FOCUS_CHARS) if instructions else ""
    return SummarySections(
        goals=_merged_goals(previous.goals, facts.user_requests),
        # Previous constraints first and never displaced: they must outlive every round.
        constraints=unique_items([*previous.constraints, *facts.constraints])[:MAX_CONSTRAINTS],
        done=done,
        done_merged=done_merged,
        in_progress=(facts.last_intent,) if facts.last_intent else previous.in_progress,
        blocked=_blocked(previous, facts),
        decisions=unique_items([*new_decisions, *previous.decisions])[:_MAX_DECISIONS],
        next_steps=_next_steps(facts, previous.next_steps),
        focus=focus or None,
        files_read=unique_paths(previous.files_read, facts.files_read),
        files_modified=unique_paths(previous.files_modified, facts.files_modified),
        errors=newest_errors([*previous.errors, *facts.errors]),
        context=unique_items(previous.context)[:_MAX_CONTEXT_LINES],
    )


def _merged_goals(previous: tuple[str, ...], requests: tuple[str, ...]) -> tuple[str, ...]:
    goals = list(previous)
    later = list(requests)
    if not goals and later:
        # The first request is the task itself: kept verbatim, line breaks and all.
        goals.append(cap_with_note(later.pop(0), _FIRST_GOAL_CHARS))
    goals += [cap_with_note(one_line(r), _LATER_GOAL_CHARS) for r in later if is_substantive(r)]
    unique = unique_items(goals)
    # The opening requests define the task and the latest show where it is heading; the
    # ones in between are the first to go.
    if len(unique) > 1 + _MAX_EARLY_GOALS + _MAX_LATER_GOALS:
        unique = (
            unique[0],
            *unique[1 : 1 + _MAX_EARLY_GOALS],
            *unique[-_MAX_LATER_GOALS:],
        )
    return unique


def _merged_done(
    previous: tuple[DoneAction, ...], merged: int, actions: tuple[str, ...]
) -> tuple[tuple[DoneAction, ...], int]:
    """Repeated actions collapse into one line with a count, placed at their latest run."""
    by_key: dict[str, DoneAction] = {}
    for action in [*previous, *(DoneAction(a) for a in actions)]:
        key = identity_key(action.text)
        earlier = by_key.pop(key, None)
        by_key[key] = DoneAction(action.text, action.count + (earlier.count if earlier else 0))
    kept = list(by_key.values())
    dropped = kept[:-_MAX_DONE] if len(kept) > _MAX_DONE else []
    return tuple(kept[-_MAX_DONE:]), merged + sum(a.count for a in dropped)


def _blocked(previous: SummarySections, facts: TranscriptFacts) -> tuple[str, ...]:
    # With no new tool results, nothing says whether the old blocker was resolved.
    if not facts.saw_tool_result:
        return previous.blocked
    if facts.last_result_error is None:
        return ()
    return (f"Latest tool call failed: {code_span(facts.last_result_error)}",)


def _next_steps(facts: TranscriptFacts, previous: tuple[str, ...]) -> tuple[str, ...]:
    steps: list[str] = []
    if facts.last_result_error:
        steps.append(f"{_RESOLVE_STEP} {code_span(facts.last_result_error)}")
    if facts.unanswered_request:
        request = cap(one_line(facts.unanswered_request), _LATER_GOAL_CHARS)
        steps.append(f"{_REQUEST_STEP} {request}")
    if facts.last_intent:
        steps.append(facts.last_intent)
        return tuple(steps)
    # Without a newer stated intent the earlier plan still stands, after anything urgent;
    # its own error and request steps are stale once newer results or turns arrived.
    stale: list[str] = []
    if facts.saw_tool_result:
        stale.append(_RESOLVE_STEP)
    if facts.user_requests:
        stale.append(_REQUEST_STEP)
    kept = [step for step in previous if not step.startswith(tuple(stale))]
    return unique_items([*steps, *kept])[:_MAX_STEPS]


def unique_items(items: Iterable[str]) -> tuple[str, ...]:
    """Items without repeats (same words, any case or spacing), first occurrence kept."""
    by_key: dict[str, str] = {}
    for item in items:
        by_key.setdefault(identity_key(item), item)
    return tuple(by_key.values())


def unique_paths(previous: tuple[str, ...], new: tuple[str, ...]) -> tuple[str, ...]:
    # Paths compare exactly: `a/B.py` and `a/b.py` can be different files.
    return tuple(dict.fromkeys([*previous, *new]))[-MAX_FILES:]


def newest_errors(errors: list[str]) -> tuple[str, ...]:
    """The newest distinct errors, oldest first; a repeated error counts at its latest."""
    newest_first = unique_items(reversed(errors))
    return tuple(reversed(newest_first[:MAX_ERRORS]))
