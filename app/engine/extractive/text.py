"""Text helpers of the extractive summarizer: sentences, user-text cleaning, caps, code spans."""

from __future__ import annotations

import re

# Blocks an agent harness injects into user turns; they are not the user's words.
_HARNESS_BLOCK = re.compile(
    r"<(system-reminder|local-command-caveat|local-command-stdout|local-command-stderr|"
    r"command-name|command-message|command-args|task-notification|user-prompt-submit-hook)>"
    r".*?</\1>",
    re.DOTALL,
)
# Issue templates carry HTML comments meant for the writer, not the reader.
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_INTERRUPTION = re.compile(
    r"\[Request interrupted by user[^\]]*\]|^Read the output file to retrieve the result: \S+$",
    re.MULTILINE,
)
_FENCED_CODE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
# `<task_description>`, `</pr_description>` opening or closing a line: wrappers around the
# words, not words (a tag inside a sentence stays, it may be what the sentence is about).
_MARKUP_TAG = re.compile(r"^(?:\s*</?[a-z][\w-]*>)+|(?:</?[a-z][\w-]*>\s*)+$")
# Rules of dashes or equals signs, with or without a title inside ("--- NEW TASK ---").
_DECORATION = re.compile(r"^(?:[-=*_~#]{3,}.*[-=*_~#]{3,}|[-=*_~#\s]{3,}|\*\*[^*]+\*\*:?)$")
_MD_HEADING = re.compile(r"^#{1,6}\s")
# English sentences end at punctuation plus space; CJK punctuation needs no space after it.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？；])")

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.")


def one_line(text: str) -> str:
    """`text` with all runs of whitespace collapsed to one space."""
    return " ".join(text.split())


def identity_key(text: str) -> str:
    """The key two items must share to count as the same item."""
    return one_line(text).casefold()


def cap(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with an ellipsis when it was cut."""
    return text if len(text) <= limit else text[:limit].rstrip() + " …"


def cap_with_note(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()} … [{len(text) - limit} more characters not shown]"


def code_span(text: str) -> str:
    """`text` as a one-line markdown code span that survives backticks inside it."""
    # A code span cannot hold a line break and stay one list item.
    text = " ".join(text.splitlines())
    if "`" not in text:
        return f"`{text}`"
    fence = "`" * (max(len(run) for run in re.findall(r"`+", text)) + 1)
    return f"{fence} {text} {fence}"


def unwrap_code_span(text: str) -> str:
    """The content of a code span written by `code_span`, or `text` unchanged."""
    match = re.fullmatch(r"(`+)(.+?)\1", text.strip(), re.DOTALL)
    if not match:
        return text.strip()
    inner = match.group(2)
    padded = inner.startswith(" ") and inner.endswith(" ") and inner.strip()
    return inner[1:-1] if padded else inner


def clean_user_text(text: str) -> str:
    """User text without harness-injected blocks and interruption notes."""
    text = _INTERRUPTION.sub("", _HARNESS_BLOCK.sub("", text))
    return _HTML_COMMENT.sub("", text).strip()


def is_substantive(text: str) -> bool:
    """False for acknowledgements such as "ok" or "continue" that set no new goal."""
    return len(text.split()) >= 3 or len(_CJK.findall(text)) >= 4


def sentences(text: str) -> list[str]:
    """Sentences of prose `text`, code blocks left out, list markers stripped."""
    return [sentence for line in sentence_lines(text) for sentence in line]


def _unwrapped_lines(text: str) -> list[str]:
    """Lines with hard-wrapped sentences joined: a line that does not end a sentence and a
    next line that goes on in lower case are one line."""
    lines: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if (
            lines
            and stripped[:1].islower()
            and lines[-1].strip()
            and not lines[-1].rstrip().endswith((".", "!", "?", ":", ";"))
            and not _LIST_MARKER.match(line)
        ):
            lines[-1] = f"{lines[-1].rstrip()} {stripped}"
        else:
            lines.append(line)
    return lines


def sentence_lines(text: str) -> list[list[str]]:
    """The sentences of prose `text`, grouped by line: code blocks, markup tags, headings
    and decoration lines left out, list markers stripped."""
    found: list[list[str]] = []
    for line in _unwrapped_lines(_FENCED_CODE.sub("\n", text)):
        line = _LIST_MARKER.sub("", _MARKUP_TAG.sub("", line.strip())).strip()
        if not line or _DECORATION.match(line) or _MD_HEADING.match(line):
            continue
        parts = [part.strip() for part in _SENTENCE_BREAK.split(line) if part.strip()]
        joined: list[str] = []
        for index, part in enumerate(parts):
            # "e.g. x" is one sentence although a period and a space follow "e.g".
            if index and parts[index - 1].casefold().endswith(_ABBREVIATIONS):
                joined[-1] = f"{joined[-1]} {part}"
            else:
                joined.append(part)
        found.append(joined)
    return found
