"""Small edits of a summary's markdown by section: read a section, add items, drop one.

Used after a summarizer wrote its text, so it must cope with any writer: headings are
found by words in their title at any level, and a section runs to the next heading of the
same or a higher level (`## Progress` keeps its `###` subsections).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_NONE_LINE = re.compile(r"^\s*(?:[-*+]\s+)?[(*_]*(?:none|n/a|nothing)[)*_.]*\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SectionSpan:
    """Line indices of a section: its heading line and the end of its body (exclusive)."""

    heading: int
    end: int


def find_section(lines: Sequence[str], words: Sequence[str]) -> SectionSpan | None:
    """The first section whose heading title contains one of `words` (any case)."""
    for index, line in enumerate(lines):
        heading = _HEADING.match(line)
        if heading is None:
            continue
        title = heading.group(2).casefold()
        if any(word in title for word in words):
            return SectionSpan(index, _section_end(lines, index, len(heading.group(1))))
    return None


def _section_end(lines: Sequence[str], start: int, level: int) -> int:
    for index in range(start + 1, len(lines)):
        heading = _HEADING.match(lines[index])
        if heading is not None and len(heading.group(1)) <= level:
            return index
    return len(lines)


def section_body(markdown: str, words: Sequence[str]) -> str | None:
    """The text under the first heading matching `words`, or None when there is none."""
    lines = markdown.splitlines()
    span = find_section(lines, words)
    if span is None:
        return None
    return "\n".join(lines[span.heading + 1 : span.end]).strip()


def add_items(
    markdown: str,
    words: Sequence[str],
    heading: str,
    items: Sequence[str],
    before: Sequence[Sequence[str]] = (),
) -> str:
    """`markdown` with `items` (rendered lines) appended to the section matching `words`.

    A "(none)" line in that section goes, since it is no longer true. With no such
    section, a new one titled `heading` is placed before the first section matching one
    of `before`, or at the end.
    """
    if not items:
        return markdown
    lines = markdown.rstrip().splitlines()
    span = find_section(lines, words)
    if span is None:
        block = ["", heading, *items, ""]
        at = next(
            (s.heading for s in (find_section(lines, w) for w in before) if s is not None),
            None,
        )
        if at is None:
            return "\n".join([*lines, *block[:-1]]).strip()
        return "\n".join([*lines[:at], *block[1:], *lines[at:]]).strip()
    body = [line for line in lines[span.heading + 1 : span.end] if not _NONE_LINE.match(line)]
    while body and not body[-1].strip():
        body.pop()
    tail = lines[span.end :]
    spacer = [""] if tail else []
    return "\n".join([*lines[: span.heading + 1], *body, *items, *spacer, *tail]).strip()


def remove_section(markdown: str, words: Sequence[str]) -> str:
    """`markdown` without any section whose heading matches `words`."""
    lines = markdown.splitlines()
    span = find_section(lines, words)
    while span is not None:
        lines = lines[: span.heading] + lines[span.end :]
        span = find_section(lines, words)
    return "\n".join(lines).strip()


def bullet(text: str, prefix: str = "") -> str:
    """One list item; later lines are indented so they stay inside the item."""
    first, *rest = [line.rstrip() for line in text.strip().splitlines()] or [""]
    return "\n".join([f"- {prefix}{first}", *(f"  {line}" if line else "" for line in rest)])
