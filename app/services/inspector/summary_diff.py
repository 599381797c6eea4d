"""Two summaries side by side: what the newer one dropped and what it added, by words."""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

# Each word with the whitespace after it (leading whitespace alone), so the marked text
# reads exactly as written and the matcher compares half as many pieces.
_TOKENS = re.compile(r"^\s+|\S+\s*")

# Beyond this many words a side, the matcher compares lines: word matching is quadratic
# at worst, and a page should not wait seconds on two very long summaries.
MAX_WORDS = 8_000

SegmentKind = Literal["same", "added", "removed"]


@dataclass(frozen=True, slots=True)
class DiffSegment:
    """A run of words that is the same on both sides, or only on one."""

    kind: SegmentKind
    text: str


@dataclass(frozen=True, slots=True)
class SummaryDiff:
    """The previous summary with its removed parts, the new one with its added parts."""

    previous: tuple[DiffSegment, ...]
    current: tuple[DiffSegment, ...]

    @property
    def added_words(self) -> int:
        return sum(len(s.text.split()) for s in self.current if s.kind == "added")

    @property
    def removed_words(self) -> int:
        return sum(len(s.text.split()) for s in self.previous if s.kind == "removed")


def diff_summaries(previous: str, current: str) -> SummaryDiff:
    """Word-level differences between two summaries (difflib, no junk heuristic)."""
    old, new = _TOKENS.findall(previous), _TOKENS.findall(current)
    if max(len(old), len(new)) > MAX_WORDS:
        old, new = previous.splitlines(keepends=True), current.splitlines(keepends=True)
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    left: list[DiffSegment] = []
    right: list[DiffSegment] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            _add(left, "same", "".join(old[i1:i2]))
            _add(right, "same", "".join(new[j1:j2]))
            continue
        if i2 > i1:
            _add(left, "removed", "".join(old[i1:i2]))
        if j2 > j1:
            _add(right, "added", "".join(new[j1:j2]))
    return SummaryDiff(previous=tuple(left), current=tuple(right))


def _add(segments: list[DiffSegment], kind: SegmentKind, text: str) -> None:
    """Appends `text`, merging it into the last segment of the same kind."""
    if not text:
        return
    if segments and segments[-1].kind == kind:
        segments[-1] = DiffSegment(kind, segments[-1].text + text)
    else:
        segments.append(DiffSegment(kind, text))
