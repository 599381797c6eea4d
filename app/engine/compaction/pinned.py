"""Pinned facts: what every summary must keep, whatever the summarizer wrote.

The task and the user's later requests, the user's rules and preferences, the facts the user
stated (a changed value only in its latest form), the caller's explicit pins, the files read
and modified (across all compactions), the first error and the newest ones. They are what
the extractive summarizer keeps from the folded messages and the previous summary, with the
same token budgets, so a fact restored once is carried into every later round even when
the summarizer forgets everything. A line of the model's summary that still presents a
replaced value as current is rewritten to the new statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from app.engine.compaction.summary_edit import add_items, bullet, section_body
from app.engine.extractive.merge import unique_items
from app.engine.extractive.sections import parse_summary
from app.engine.extractive.summarizer import merged_summary
from app.engine.extractive.text import code_span, identity_key, one_line
from app.engine.extractive.updates import main_text
from app.engine.messages import Message

GOAL_HEADING = "## Goal"
CONSTRAINTS_HEADING = "## Constraints & Preferences"
CRITICAL_CONTEXT_HEADING = "## Critical Context"
_GOAL_WORDS = ("goal", "objective")
_CONSTRAINT_WORDS = ("constraint", "preference")
_CONTEXT_WORDS = ("critical context",)
# Where a missing section goes: before the first of these that exists.
_AFTER_GOAL = (_CONSTRAINT_WORDS, ("progress",), ("decision",), ("next step",), _CONTEXT_WORDS)
_AFTER_CONSTRAINTS = (("progress",), ("decision",), ("next step",), _CONTEXT_WORDS)
PINNED_PREFIX = "Pinned: "
FACT_PREFIX = "Fact: "
# A goal counts as held when its opening words are there: models rephrase the rest.
_GOAL_PROBE_CHARS = 120


class FactKind(StrEnum):
    GOAL = "goal"
    CONSTRAINT = "constraint"
    FACT = "fact"
    PINNED = "pinned"
    FILE_READ = "file_read"
    FILE_MODIFIED = "file_modified"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class PinnedFact:
    """One fact a summary must contain; `replaces` is the earlier statement it stands for."""

    kind: FactKind
    text: str
    replaces: str | None = None


def collect_pinned_facts(
    messages: Sequence[Message], previous_summary: str | None, pinned: Sequence[str] = ()
) -> tuple[PinnedFact, ...]:
    """The facts the summary of `messages` (after `previous_summary`) must keep."""
    merged = merged_summary(tuple(messages), previous_summary, None)
    s = merged.sections
    stands_for = {new: old for old, new in merged.replaced.items()}
    pins = unique_items(p.strip() for p in pinned if p.strip())
    errors = [e for e in [s.first_error, *s.errors] if e]
    return (
        *(PinnedFact(FactKind.GOAL, g) for g in s.goals),
        *(PinnedFact(FactKind.CONSTRAINT, c, stands_for.get(c)) for c in s.constraints),
        *(PinnedFact(FactKind.FACT, f, stands_for.get(f)) for f in s.facts),
        *(PinnedFact(FactKind.PINNED, p) for p in pins),
        *(PinnedFact(FactKind.FILE_READ, path) for path in s.files_read),
        *(PinnedFact(FactKind.FILE_MODIFIED, path) for path in s.files_modified),
        *(PinnedFact(FactKind.ERROR, e) for e in errors),
    )


def restore_pinned_facts(
    summary: str, facts: Sequence[PinnedFact]
) -> tuple[str, tuple[PinnedFact, ...]]:
    """`summary` with every missing fact added to its section, and the facts added.

    Goals count as present when their opening words are anywhere in the summary; rules
    and pins when their words appear, whitespace aside, in their section; facts anywhere;
    files and errors when the summary's file lists and error lines (as the extractive
    parser reads them) hold them, since only those are carried onward. A line that still
    presents a replaced statement as current is rewritten first.
    """
    summary, rewritten = _without_replaced(summary, facts)
    parsed = parse_summary(summary)
    whole = one_line(summary).casefold()
    constraints_text = one_line(section_body(summary, _CONSTRAINT_WORDS) or "")
    context_text = one_line(section_body(summary, _CONTEXT_WORDS) or "")
    files_read = set(parsed.files_read)
    files_modified = set(parsed.files_modified)
    errors = {identity_key(e) for e in [parsed.first_error, *parsed.errors] if e}
    missing: list[PinnedFact] = []
    for fact in facts:
        if fact in rewritten:
            continue
        if fact.kind is FactKind.GOAL:
            present = one_line(fact.text)[:_GOAL_PROBE_CHARS].casefold() in whole
        elif fact.kind is FactKind.CONSTRAINT:
            present = one_line(main_text(fact.text)) in constraints_text
        elif fact.kind is FactKind.FACT:
            present = one_line(main_text(fact.text)).casefold() in whole
        elif fact.kind is FactKind.PINNED:
            present = one_line(fact.text) in context_text
        elif fact.kind is FactKind.FILE_READ:
            present = fact.text in files_read or fact.text in files_modified
        elif fact.kind is FactKind.FILE_MODIFIED:
            present = fact.text in files_modified
        else:
            present = identity_key(fact.text) in errors
        if not present:
            missing.append(fact)
    errors_first = (
        parsed.first_error is None and bool(facts) and any(f.kind is FactKind.ERROR for f in facts)
    )
    first_error = next((f for f in facts if f.kind is FactKind.ERROR), None)
    lead = first_error if errors_first and first_error in missing else None
    return _with_facts(summary, missing, lead), (*rewritten, *missing)


def _without_replaced(
    summary: str, facts: Sequence[PinnedFact]
) -> tuple[str, tuple[PinnedFact, ...]]:
    """`summary` with lines that quote a replaced statement as current rewritten to the
    statement that replaced it."""
    rewritten: list[PinnedFact] = []
    lines = summary.splitlines()
    for fact in facts:
        if not fact.replaces:
            continue
        old = main_text(fact.replaces)
        for index, line in enumerate(lines):
            if old in line and fact.text not in line:
                lines[index] = line.replace(old, fact.text)
                if fact not in rewritten:
                    rewritten.append(fact)
    return "\n".join(lines), tuple(rewritten)


def _with_facts(summary: str, missing: Sequence[PinnedFact], first_error: PinnedFact | None) -> str:
    def of(kind: FactKind) -> list[str]:
        return [f.text for f in missing if f.kind is kind]

    goal_lines = [bullet(text) for text in of(FactKind.GOAL)]
    constraint_lines = [bullet(text) for text in of(FactKind.CONSTRAINT)]
    context_lines = [bullet(text, FACT_PREFIX) for text in of(FactKind.FACT)]
    context_lines += [bullet(text, PINNED_PREFIX) for text in of(FactKind.PINNED)]
    files = (("Files modified", FactKind.FILE_MODIFIED), ("Files read", FactKind.FILE_READ))
    for label, kind in files:
        paths = of(kind)
        if paths:
            context_lines.append(f"- {label}: " + ", ".join(code_span(p) for p in paths))
    if first_error is not None:
        context_lines.append(f"- First error: {code_span(first_error.text)}")
    context_lines += [
        f"- Error: {code_span(f.text)}"
        for f in missing
        if f.kind is FactKind.ERROR and f is not first_error
    ]
    summary = add_items(summary, _GOAL_WORDS, GOAL_HEADING, goal_lines, _AFTER_GOAL)
    summary = add_items(
        summary, _CONSTRAINT_WORDS, CONSTRAINTS_HEADING, constraint_lines, _AFTER_CONSTRAINTS
    )
    return add_items(summary, _CONTEXT_WORDS, CRITICAL_CONTEXT_HEADING, context_lines)
