"""Pinned facts: what every summary must keep verbatim, whatever the summarizer wrote.

The user's stated constraints and preferences, the caller's explicit pins, the files read
and modified (across all compactions) and the latest errors. They are collected from the
folded messages and from the previous summary's own sections, so a fact restored once is
carried into every later round even when the summarizer forgets everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.summary_edit import add_items, bullet, section_body
from app.engine.extractive.sections import SummarySections, parse_summary
from app.engine.extractive.summarizer import (
    MAX_CONSTRAINTS,
    newest_errors,
    unique_items,
    unique_paths,
)
from app.engine.extractive.text import code_span, identity_key, one_line
from app.engine.extractive.transcript import read_transcript
from app.engine.messages import Message

CONSTRAINTS_HEADING = "## Constraints & Preferences"
CRITICAL_CONTEXT_HEADING = "## Critical Context"
_CONSTRAINT_WORDS = ("constraint", "preference")
_CONTEXT_WORDS = ("critical context",)
# Where a missing Constraints section goes: before the first of these that exists.
_AFTER_CONSTRAINTS = (("progress",), ("decision",), ("next step",), _CONTEXT_WORDS)
PINNED_PREFIX = "Pinned: "


class FactKind(StrEnum):
    CONSTRAINT = "constraint"
    PINNED = "pinned"
    FILE_READ = "file_read"
    FILE_MODIFIED = "file_modified"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class PinnedFact:
    """One fact a summary must contain verbatim."""

    kind: FactKind
    text: str


def collect_pinned_facts(
    messages: Sequence[Message], previous_summary: str | None, pinned: Sequence[str] = ()
) -> tuple[PinnedFact, ...]:
    """The facts the summary of `messages` (after `previous_summary`) must keep."""
    previous = _previous_sections(previous_summary)
    facts = read_transcript(messages)
    constraints = unique_items([*previous.constraints, *facts.constraints])[:MAX_CONSTRAINTS]
    pins = unique_items(p.strip() for p in pinned if p.strip())
    read = unique_paths(previous.files_read, facts.files_read)
    modified = unique_paths(previous.files_modified, facts.files_modified)
    errors = newest_errors([*previous.errors, *facts.errors])
    return (
        *(PinnedFact(FactKind.CONSTRAINT, c) for c in constraints),
        *(PinnedFact(FactKind.PINNED, p) for p in pins),
        *(PinnedFact(FactKind.FILE_READ, path) for path in read),
        *(PinnedFact(FactKind.FILE_MODIFIED, path) for path in modified),
        *(PinnedFact(FactKind.ERROR, e) for e in errors),
    )


def _previous_sections(previous_summary: str | None) -> SummarySections:
    if not previous_summary:
        return SummarySections()
    return parse_summary(SummaryMarker.parse(previous_summary) or previous_summary)


def restore_pinned_facts(
    summary: str, facts: Sequence[PinnedFact]
) -> tuple[str, tuple[PinnedFact, ...]]:
    """`summary` with every missing fact added to its section, and the facts added.

    Constraints and pins count as present when their words appear, whitespace aside, in
    their section; files and errors when the summary's file lists and error lines (as
    the extractive parser reads them) hold them, since only those are carried onward.
    """
    parsed = parse_summary(summary)
    constraints_text = one_line(section_body(summary, _CONSTRAINT_WORDS) or "")
    context_text = one_line(section_body(summary, _CONTEXT_WORDS) or "")
    files_read = set(parsed.files_read)
    files_modified = set(parsed.files_modified)
    errors = {identity_key(e) for e in parsed.errors}
    missing: list[PinnedFact] = []
    for fact in facts:
        if fact.kind is FactKind.CONSTRAINT:
            present = one_line(fact.text) in constraints_text
        elif fact.kind is FactKind.PINNED:
            present = one_line(fact.text) in context_text
        elif fact.kind is FactKind.FILE_READ:
            present = fact.text in files_read
        elif fact.kind is FactKind.FILE_MODIFIED:
            present = fact.text in files_modified
        else:
            present = identity_key(fact.text) in errors
        if not present:
            missing.append(fact)
    return _with_facts(summary, missing), tuple(missing)


def _with_facts(summary: str, missing: Sequence[PinnedFact]) -> str:
    def of(kind: FactKind) -> list[str]:
        return [f.text for f in missing if f.kind is kind]

    constraint_lines = [bullet(text) for text in of(FactKind.CONSTRAINT)]
    context_lines = [bullet(text, PINNED_PREFIX) for text in of(FactKind.PINNED)]
    files = (("Files read", FactKind.FILE_READ), ("Files modified", FactKind.FILE_MODIFIED))
    for label, kind in files:
        paths = of(kind)
        if paths:
            context_lines.append(f"- {label}: " + ", ".join(code_span(p) for p in paths))
    context_lines += [f"- Error: {code_span(e)}" for e in of(FactKind.ERROR)]
    summary = add_items(
        summary, _CONSTRAINT_WORDS, CONSTRAINTS_HEADING, constraint_lines, _AFTER_CONSTRAINTS
    )
    return add_items(summary, _CONTEXT_WORDS, CRITICAL_CONTEXT_HEADING, context_lines)
