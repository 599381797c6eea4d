"""Text rules of the extractive summarizer: sentences, cue words, error lines and caps."""

from __future__ import annotations

import re

# Blocks an agent harness injects into user turns; they are not the user's words.
_HARNESS_BLOCK = re.compile(
    r"<(system-reminder|local-command-caveat|local-command-stdout|local-command-stderr|"
    r"command-name|command-message|command-args|task-notification|user-prompt-submit-hook)>"
    r".*?</\1>",
    re.DOTALL,
)
_INTERRUPTION = re.compile(
    r"\[Request interrupted by user[^\]]*\]|^Read the output file to retrieve the result: \S+$",
    re.MULTILINE,
)
_FENCED_CODE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
# English sentences end at punctuation plus space; CJK punctuation needs no space after it.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？；])")

_CONSTRAINT_CUE = re.compile(
    r"^only\b|\b(?:do(?:n['’]t| not)|never|always|must(?:n['’]t)?|should(?:n['’]t)?|avoid|"
    # A bare "only" is mostly a fact ("it only fails on CI"); as a rule it leads or is bound.
    r"(?:should|must|can|please) only|only (?:use|modify|change|touch|edit|run|work|write|add|"
    r"fix|read|commit|test|output|return)|"
    r"prefer(?:ably|red)?|make sure|ensure|without|keep|unchanged|(?:need|needs|have|has) to|"
    r"required?|instead of|stick to|not allowed|at most|at least)\b"
    r"|必须|不要|保持|只|不能|不得|禁止|务必|一定要|请勿|不许|应该|避免|确保|尽量|优先|仅",
    re.IGNORECASE,
)
_DECISION_CUE = re.compile(
    r"\b(?:I['’]ll|I will|we['’]ll|we will|let['’]s|decided|decide to|instead|going to|"
    r"chose|opted)\b|我(?:将|会|决定|打算)|决定|改为|改用",
    re.IGNORECASE,
)
_INTENT_CUE = re.compile(
    r"\b(?:let me|let['’]s|I['’]ll|I will|I['’]m going to|I need to|we need to|next|now I|"
    r"now let)\b|接下来|下一步|我(?:将|会|来|要)",
    re.IGNORECASE,
)

# An error line: a Python-style exception line (also pytest's `E   ...` form), a
# `error:`/`fatal:` prefix, a compiler `file:line: error:` line, pytest FAILED, npm ERR!.
_ERROR_LINE = re.compile(
    r"(?-i:^(?:E\s+)?(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception)(?::\s|:?$))"
    r"|^(?:error|fatal|panic)(?:\[[\w-]+\])?[:!]"
    r"|:\d+(?::\d+)?:\s*(?:fatal )?error:"
    r"|(?-i:\bFAILED\b|\bERR!)",
    re.IGNORECASE,
)
_TRACEBACK = "Traceback (most recent call last)"
_TRACEBACK_SOURCE = re.compile(r"^(?:File \"|raise\b|except\b|Traceback\b)")
_FAILED_EXIT = re.compile(r"\bexit(?:ed with)? code:? ?[1-9]\d*", re.IGNORECASE)
# Harness lines around a tool's output: OpenHands' markers and shell prompt, exit notes.
_NOISE_LINE = re.compile(r"^(?:OBSERVATION:|\[.*\]|\S+@\S+:.*[#$])$")
_HARNESS_SUFFIX = re.compile(r"\[Python Interpreter: [^\]]*\]$")
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
    return text.strip()


def is_substantive(text: str) -> bool:
    """False for acknowledgements such as "ok" or "continue" that set no new goal."""
    return len(text.split()) >= 3 or len(_CJK.findall(text)) >= 4


def sentences(text: str) -> list[str]:
    """Sentences of prose `text`, code blocks left out, list markers stripped."""
    found: list[str] = []
    for line in _FENCED_CODE.sub("\n", text).splitlines():
        line = _LIST_MARKER.sub("", line).strip()
        parts = [part.strip() for part in _SENTENCE_BREAK.split(line) if part.strip()]
        for index, part in enumerate(parts):
            # "e.g. x" is one sentence although a period and a space follow "e.g".
            if index and parts[index - 1].casefold().endswith(_ABBREVIATIONS):
                found[-1] = f"{found[-1]} {part}"
            else:
                found.append(part)
    return found


def constraint_sentences(text: str) -> list[str]:
    """The sentences of user text that state a constraint or preference, verbatim."""
    return [cap(s, 400) for s in sentences(text) if _CONSTRAINT_CUE.search(s)]


def decision_sentences(text: str) -> list[str]:
    """The sentences of assistant text that announce a decision."""
    return [cap(s, 300) for s in sentences(text) if _DECISION_CUE.search(s)]


def intent_of(text: str) -> str | None:
    """What assistant text says it will do next: its intent sentences, else its opening."""
    found = sentences(text)
    chosen = [s for s in found if _INTENT_CUE.search(s)][:2] or found[:2]
    return cap(" ".join(chosen), 300) if chosen else None


def error_lines(text: str, *, head_only: bool) -> list[str]:
    """The error lines of a tool output, verbatim; `head_only` scans only its first lines."""
    lines = [line.rstrip() for line in text.splitlines()]
    lines = [line for line in lines if line.strip() and line.strip() != "OBSERVATION:"]
    scanned = lines[:3] if head_only else lines
    traceback_at = next((i for i, line in enumerate(lines) if line.startswith(_TRACEBACK)), None)
    found: list[str] = []
    for index, raw in enumerate(scanned):
        line = raw.strip()
        if traceback_at is not None and _closes_traceback(lines, index, traceback_at):
            found.append(line)
        elif not _TRACEBACK_SOURCE.match(line) and _ERROR_LINE.search(line):
            # A bare "ERROR:" heading says nothing; its message is on the next line.
            if len(line) < 12 and line.endswith(":") and index + 1 < len(lines):
                line = f"{line} {lines[index + 1].strip()}"
            found.append(line)
    unique = list(dict.fromkeys(_HARNESS_SUFFIX.sub("", line) for line in found))
    return [cap(line, 300) for line in unique[-2:]]


def _closes_traceback(lines: list[str], index: int, traceback_at: int) -> bool:
    """True for the exception line that closes a Python traceback: its last line."""
    line = lines[index]
    if index <= traceback_at or line[:1].isspace() or line.startswith(("Traceback", "During")):
        return False
    # Frames are indented; the first flush-left line after them names the exception.
    return lines[index - 1][:1].isspace()


def failed_exit(text: str) -> bool:
    """True when a tool output reports a non-zero exit code."""
    return _FAILED_EXIT.search(text) is not None


def last_meaningful_line(text: str) -> str | None:
    """The last line of a tool output that is not an exit-code or harness note."""
    for line in reversed(text.splitlines()):
        line = _HARNESS_SUFFIX.sub("", line.strip())
        if line and not _NOISE_LINE.match(line) and not failed_exit(line):
            return cap(line, 300)
    return None
