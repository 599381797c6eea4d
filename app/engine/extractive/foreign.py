"""Summaries written by other agents, read into our sections.

Claude Code's continuation summary (numbered "1. Primary Request and Intent:" headings, often
25,000 characters long), an LLM's markdown, a plain list: their sections are matched by the
words of their headings, and only what an agent needs next is kept, capped — the request,
the rules in the user's quoted messages, the errors, the pending work — never the whole text
as a goal.
"""

from __future__ import annotations

import re

from app.engine.extractive.sections import DoneAction, SummarySections
from app.engine.extractive.statements import Act, statements
from app.engine.extractive.text import cap, one_line

_MD_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BOLD_HEADING = re.compile(r"^\s{0,3}\*\*([^*]+?)\*\*:?\s*$")
# "1. Primary Request and Intent:" — a numbered title ending in a colon, nothing after it.
_NUMBERED_HEADING = re.compile(r"^\s{0,3}\d+\.\s+([A-Z][\w &/,'()-]{2,60}):\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*+•]|\d+[.)])\s+(.*)$")
_NONE = re.compile(r"^[(*_]*(?:none|n/a|nothing|无)[)*_.]*$", re.IGNORECASE)
_CODE_PATH = re.compile(r"`([^`\s]+\.[\w]+)`")
_CHANGED = re.compile(r"\b(?:new|created?|modified|edited|updated|changed|added|written)\b", re.I)
# Heading words to what we keep, most specific first.
_KEYS = (
    ("user message", "user_messages"),
    ("primary request", "goals"),
    ("intent", "goals"),
    ("objective", "goals"),
    ("goal", "goals"),
    ("constraint", "constraints"),
    ("preference", "constraints"),
    ("requirement", "constraints"),
    ("error", "errors"),
    ("pending", "next_steps"),
    ("next step", "next_steps"),
    ("todo", "next_steps"),
    ("remaining", "next_steps"),
    ("current work", "in_progress"),
    ("in progress", "in_progress"),
    ("current state", "in_progress"),
    ("decision", "decisions"),
    ("completed", "done"),
    ("done", "done"),
    ("accomplished", "done"),
    ("file", "files"),
)
_GOAL_CHARS = 600
_ITEM_CHARS = 240
_MAX_ITEMS = 6


def read_foreign_summary(body: str) -> SummarySections:
    """The sections of a summary in another agent's layout."""
    by_key: dict[str, list[str]] = {}
    key: str | None = None
    lines: list[str] = []
    for line in body.splitlines():
        title = _heading(line)
        if title is not None:
            if key:
                by_key.setdefault(key, []).extend(_top_items(lines))
            key, lines = _key(title), []
        else:
            lines.append(line)
    if key:
        by_key.setdefault(key, []).extend(_top_items(lines))
    if not by_key:
        # No headings at all: a plain summary; its opening lines say what it is about.
        return SummarySections(context=tuple(cap(i, _ITEM_CHARS) for i in _top_items(lines)[:8]))
    constraints = [
        s.text
        for item in [*by_key.get("constraints", []), *by_key.get("user_messages", [])]
        for s in statements(item.strip('"“”'))
        if s.act in (Act.RULE, Act.PREFERENCE)
    ]
    read, modified = _files(by_key.get("files", []))
    return SummarySections(
        goals=(cap(" ".join(by_key["goals"]), _GOAL_CHARS),) if by_key.get("goals") else (),
        constraints=tuple(dict.fromkeys(cap(c, 400) for c in constraints)),
        done=tuple(DoneAction(cap(i, _ITEM_CHARS)) for i in by_key.get("done", [])[:_MAX_ITEMS]),
        in_progress=tuple(cap(i, _ITEM_CHARS) for i in by_key.get("in_progress", [])[:2]),
        decisions=tuple(cap(i, _ITEM_CHARS) for i in by_key.get("decisions", [])[:3]),
        next_steps=tuple(cap(i, _ITEM_CHARS) for i in by_key.get("next_steps", [])[:_MAX_ITEMS]),
        files_read=read,
        files_modified=modified,
        context=tuple(
            f"Earlier error: {cap(i, _ITEM_CHARS)}" for i in by_key.get("errors", [])[-3:]
        ),
    )


def _heading(line: str) -> str | None:
    for pattern in (_MD_HEADING, _BOLD_HEADING, _NUMBERED_HEADING):
        found = pattern.match(line)
        if found:
            return found.group(1).strip("*: ")
    return None


def _key(title: str) -> str | None:
    name = title.casefold()
    return next((key for word, key in _KEYS if word in name), None)


def _top_items(lines: list[str]) -> list[str]:
    """The outermost list items (continuations and sub-items folded in); or paragraphs."""
    items: list[str] = []
    indent: int | None = None
    for line in lines:
        if not line.strip():
            continue
        found = _ITEM.match(line)
        depth = len(found.group(1)) if found else None
        if found and (indent is None or (depth is not None and depth <= indent)):
            indent = depth
            items.append(found.group(2).strip())
        elif items:
            items[-1] = f"{items[-1]} {line.strip()}"
        else:
            items.append(line.strip())
    # An empty bullet or a lone mark says nothing.
    return [one_line(i) for i in items if sum(c.isalnum() for c in i) >= 2 and not _NONE.match(i)]


def _files(items: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    read: list[str] = []
    modified: list[str] = []
    for item in items:
        head = item.split(" - ", 1)[0][:300]
        for path in _CODE_PATH.findall(head):
            (modified if _CHANGED.search(head) else read).append(path)
    return tuple(dict.fromkeys(read)), tuple(dict.fromkeys(modified))
