"""The summary as typed sections: parsed from markdown by heading, rendered back to markdown.

Parsing is lenient because the previous summary may come from an LLM: headings are matched
by name at any level (or as a bold line), item markers and checkboxes may vary, and lines
that fit no known shape are kept rather than dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from app.engine.extractive.text import code_span, unwrap_code_span

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_BOLD_HEADING = re.compile(r"^\*\*([^*]+?)\*\*:?\s*$")
_ITEM_START = re.compile(r"^ ?(?:[-*+•]|\d+[.)])\s+")
_CHECKBOX = re.compile(r"^\[([ xX✓✔])\]\s*")
_CHECKBOX_SECTIONS = frozenset({"progress", "done", "in_progress"})
_NONE_ITEM = re.compile(r"^[(*_]*(?:none|n/a|nothing|无)[)*_.]*$", re.IGNORECASE)
_REPEAT_SUFFIX = re.compile(r"^(.*\S)\s+\(×(\d+)\)$", re.DOTALL)
_MERGED_NOTE = re.compile(r"^\((\d+) earlier actions? merged[^)]*\)$")
_FILES_LINE = re.compile(
    r"^\**files? (read|viewed|opened|modified|edited|changed|written|created)\b[^:]*:\**\s*(.*)$",
    re.IGNORECASE | re.DOTALL,
)
_ERROR_LINE = re.compile(r"^\**error\**:\s*(.+)$", re.IGNORECASE | re.DOTALL)
_FIRST_ERROR_LINE = re.compile(r"^\**first error\**:\s*(.+)$", re.IGNORECASE | re.DOTALL)
_FACT_LINE = re.compile(r"^\**fact\**:\s*(.+)$", re.IGNORECASE | re.DOTALL)
_FOCUS_LINE = re.compile(r"^\**focus requested\**:", re.IGNORECASE)
_CODE_SPANS = re.compile(r"(`+)(.+?)\1(?!`)", re.DOTALL)
_READ_WORDS = ("read", "viewed", "opened")
# Heading words to section keys, most specific first ("in progress" before "progress").
_SECTION_WORDS = (
    # Written after every summary from the cut itself; an old one is never carried on.
    ("current request", "current_request"),
    ("in progress", "in_progress"),
    ("in-progress", "in_progress"),
    ("progress", "progress"),
    ("done", "done"),
    ("completed", "done"),
    ("blocked", "blocked"),
    ("blocker", "blocked"),
    ("constraint", "constraints"),
    ("preference", "constraints"),
    ("goal", "goals"),
    ("objective", "goals"),
    ("decision", "decisions"),
    ("next step", "next_steps"),
    ("context", "context"),
)


@dataclass(frozen=True, slots=True)
class DoneAction:
    """A finished action and how many times it was done."""

    text: str
    count: int = 1


@dataclass(frozen=True, slots=True)
class SummarySections:
    """The content of every summary section, items oldest first unless noted."""

    goals: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    done: tuple[DoneAction, ...] = ()
    # Older actions folded into a count when the Done list hit its cap.
    done_merged: int = 0
    in_progress: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()
    # Most recent first.
    decisions: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()
    focus: str | None = None
    files_read: tuple[str, ...] = ()
    files_modified: tuple[str, ...] = ()
    # The first error of the whole work, kept through every update; then the newest ones.
    first_error: str | None = None
    errors: tuple[str, ...] = ()
    # What the user stated that is neither a rule nor a request (values, names, hosts).
    facts: tuple[str, ...] = ()
    # Critical Context lines of no known shape, kept as written.
    context: tuple[str, ...] = ()


@dataclass(slots=True)
class _Collector:
    items: dict[str, list[str]] = field(default_factory=dict)
    done: list[DoneAction] = field(default_factory=list)
    done_merged: int = 0
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    first_error: str | None = None
    errors: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)

    def add(self, key: str, item: str) -> None:
        self.items.setdefault(key, []).append(item)

    def section(self, key: str) -> tuple[str, ...]:
        return tuple(self.items.get(key, ()))


def written_by_us(markdown: str) -> bool:
    """True when `markdown` is laid out in our sections (by us or by a model we prompted):
    at least one heading names a section we write."""
    for line in markdown.splitlines():
        heading = _HEADING.match(line) or _BOLD_HEADING.match(line)
        if heading and _section_key(heading.group(1).strip("*: ")):
            return True
    return False


def parse_summary(markdown: str) -> SummarySections:
    """The sections of a summary written by this module or by an LLM."""
    collected = _Collector()
    for key, title, lines in _split_by_heading(markdown):
        for item in _items(lines):
            # Only progress items carry a checkbox; elsewhere "[x]" is part of the text.
            checkbox = _CHECKBOX.match(item) if key in _CHECKBOX_SECTIONS else None
            bare = item[checkbox.end() :] if checkbox else item
            if not bare.strip() or _NONE_ITEM.match(bare.strip()):
                continue
            if key == "progress":
                open_box = checkbox is not None and checkbox.group(1) == " "
                key_for_item = "in_progress" if open_box else "done"
            else:
                key_for_item = key
            _collect(collected, key_for_item, title, bare)
    return SummarySections(
        goals=collected.section("goals"),
        constraints=collected.section("constraints"),
        done=tuple(collected.done),
        done_merged=collected.done_merged,
        in_progress=collected.section("in_progress"),
        blocked=collected.section("blocked"),
        decisions=collected.section("decisions"),
        next_steps=collected.section("next_steps"),
        files_read=tuple(collected.files_read),
        files_modified=tuple(collected.files_modified),
        first_error=collected.first_error,
        errors=tuple(collected.errors),
        facts=tuple(collected.facts),
        context=collected.section("context"),
    )


def _collect(collected: _Collector, key: str, title: str, item: str) -> None:
    if key == "current_request":
        return
    if key == "done":
        merged = _MERGED_NOTE.match(item)
        repeated = _REPEAT_SUFFIX.match(item)
        if merged:
            collected.done_merged += int(merged.group(1))
        elif repeated:
            collected.done.append(DoneAction(repeated.group(1), int(repeated.group(2))))
        else:
            collected.done.append(DoneAction(item))
    elif key == "context":
        _collect_context(collected, item)
    elif key == "other":
        # A section this module does not write: keep its lines, labelled by its heading.
        collected.add("context", f"{title}: {item}" if title else item)
    else:
        collected.add(key, item)


def _collect_context(collected: _Collector, item: str) -> None:
    files = _FILES_LINE.match(item)
    error = _ERROR_LINE.match(item)
    first_error = _FIRST_ERROR_LINE.match(item)
    fact = _FACT_LINE.match(item)
    if first_error and collected.first_error is None:
        collected.first_error = unwrap_code_span(first_error.group(1))
    elif first_error:
        collected.errors.append(unwrap_code_span(first_error.group(1)))
    elif fact:
        collected.facts.append(fact.group(1).strip())
    elif files:
        paths = _listed_paths(files.group(2))
        is_read = files.group(1).casefold() in _READ_WORDS
        (collected.files_read if is_read else collected.files_modified).extend(paths)
    elif error:
        collected.errors.append(unwrap_code_span(error.group(1)))
    elif not _FOCUS_LINE.match(item):
        # A focus belongs to the call that asked for it; an old one is not carried on.
        collected.add("context", item)


def _listed_paths(text: str) -> list[str]:
    spans = _CODE_SPANS.findall(text)
    if spans:
        return [unwrap_code_span(fence + inner + fence) for fence, inner in spans]
    return [part.strip() for part in text.split(",") if part.strip()]


def _section_key(title: str) -> str | None:
    name = " ".join(re.sub(r"[^\w&' -]+", " ", title.casefold()).split())
    return next((key for word, key in _SECTION_WORDS if re.search(rf"\b{word}", name)), None)


def _split_by_heading(markdown: str) -> list[tuple[str, str, list[str]]]:
    """(section key, heading title, lines) per section; text before any heading is context."""
    sections: list[tuple[str, str, list[str]]] = [("context", "", [])]
    for line in markdown.splitlines():
        heading = _HEADING.match(line)
        bold = _BOLD_HEADING.match(line)
        if heading:
            title = heading.group(1).strip("*: ")
            sections.append((_section_key(title) or "other", title, []))
        elif bold and _section_key(bold.group(1)):
            title = bold.group(1).strip(": ")
            sections.append((_section_key(title) or "other", title, []))
        else:
            sections[-1][2].append(line.rstrip())
    return sections


def _items(lines: list[str]) -> list[str]:
    """List items with their continuation lines; a paragraph line is an item of its own."""
    items: list[list[str]] = []
    indent = 0
    blanks = 0
    for line in lines:
        start = _ITEM_START.match(line)
        if not line.strip():
            blanks += 1
        elif start:
            items.append([line[start.end() :]])
            indent, blanks = start.end(), 0
        elif items and (line[0].isspace() or not blanks):
            stripped = len(line) - len(line.lstrip(" "))
            items[-1].extend([""] * blanks + [line[min(stripped, indent) :]])
            blanks = 0
        else:
            items.append([line.strip()])
            indent, blanks = 0, 0
    return ["\n".join(item).strip() for item in items]


def render_summary(sections: SummarySections) -> str:
    """The summary markdown, with the SPEC §5.4 headings in order."""
    s = sections
    done = [f"- [x] ({s.done_merged} earlier actions merged)"] if s.done_merged else []
    done += [_bullet(_with_count(a), "- [x] ") for a in s.done]
    steps = s.next_steps or ("Continue from the most recent messages.",)
    parts = [
        ("## Goal", [_bullet(g) for g in s.goals]),
        ("## Constraints & Preferences", [_bullet(c) for c in s.constraints]),
        ("## Progress\n### Done", done),
        ("### In Progress", [_bullet(i, "- [ ] ") for i in s.in_progress]),
        ("### Blocked", [_bullet(b) for b in s.blocked]),
        ("## Key Decisions", [_bullet(d) for d in s.decisions]),
        ("## Next Steps", [_bullet(n, f"{i}. ") for i, n in enumerate(steps, 1)]),
        ("## Critical Context", _critical_context(s)),
    ]
    return "\n\n".join(f"{heading}\n" + ("\n".join(body) or "(none)") for heading, body in parts)


def _critical_context(s: SummarySections) -> list[str]:
    lines = [f"- Focus requested: {s.focus}"] if s.focus else []
    lines += [_bullet(f, "- Fact: ") for f in s.facts]
    if s.files_modified:
        lines.append("- Files modified: " + ", ".join(code_span(p) for p in s.files_modified))
    if s.files_read:
        lines.append("- Files read: " + ", ".join(code_span(p) for p in s.files_read))
    if s.first_error:
        lines.append(f"- First error: {code_span(s.first_error)}")
    lines += [f"- Error: {code_span(e)}" for e in s.errors]
    return lines + [_bullet(c) for c in s.context]


def _with_count(action: DoneAction) -> str:
    return f"{action.text} (×{action.count})" if action.count > 1 else action.text


def _bullet(item: str, marker: str = "- ") -> str:
    """One list item; its later lines are indented under the marker so they stay inside it."""
    # Split as the parser will (`splitlines` also breaks at "\r"); trailing blanks go.
    first, *rest = [line.rstrip() for line in item.splitlines()] or [""]
    # Indent by the list marker alone ("- ", "1. "), not the checkbox: that is what parsing
    # strips again, so a rendered summary parses back to the same items.
    pad = " " * (len(marker.split(" ")[0]) + 1)
    return "\n".join([marker + first, *(pad + line if line else "" for line in rest)])
