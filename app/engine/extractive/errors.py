"""The error line of a tool output: the exception, the compiler or linter finding, the failing
test — not the trailing hint of a stderr dump ("hint: git config advice…") nor a count
("13 tests, 1 failure")."""

from __future__ import annotations

import re

from app.engine.extractive.text import cap

# A Python-style exception line (also pytest's `E   ...` form), an `error:`/`fatal:`
# prefix, a compiler `file:line: error:` line, pytest FAILED, npm ERR!, Elixir `** (Error)`.
_ERROR_LINE = re.compile(
    r"(?-i:^(?:E\s+)?(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception)(?::\s|:?$))"
    r"|^(?:error|fatal|panic)(?:\[[\w-]+\])?[:!]"
    r"|:\d+(?::\d+)?:\s*(?:fatal )?error:"
    r"|(?-i:\bFAILED\b|\bERR!)"
    r"|^\*\* \(\w+(?:\.\w+)*(?:Error|Exception)?\)"
    r"|(?-i:^E\d{3,4} [A-Z]\w+(?:Error|Exception):)",
    re.IGNORECASE,
)
# Lines that say what went wrong without an error prefix.
_FAILURE_WORDS = re.compile(
    r"\b(?:no module named|command not found|no such file|not found|does not exist|"
    r"doesn['’]t exist|permission denied|cannot|can['’]t|could not|couldn['’]t|unable to|"
    r"is not allowed|not allowed|not permitted|invalid|undefined|unexpected|refused|denied|"
    r"failed|failure|fails|is ignored|are ignored|ignored by|missing|mismatch|conflict|"
    r"timed? ?out|unknown|unrecognized|not supported|unsupported|violat\w+|rejected|"
    r"assertion|traceback|exception|error)\b",
    re.IGNORECASE,
)
# A failing test's own line: ExUnit "1) test name (Module)", Jest "● suite › name",
# pytest "FAILED path::name", Go "--- FAIL: TestX".
_FAILING_TEST = re.compile(r"^(?:\d+\) test |● |--- FAIL: |FAIL |✗ |✕ |× )")
_TRACEBACK = "Traceback (most recent call last)"
_TRACEBACK_SOURCE = re.compile(r"^(?:File \"|raise\b|except\b|Traceback\b)")
_FAILED_EXIT = re.compile(r"\bexit(?:ed with)? code:? ?[1-9]\d*", re.IGNORECASE)
# Harness lines around a tool's output: OpenHands' markers and shell prompt, exit notes.
_NOISE_LINE = re.compile(
    r"^(?:OBSERVATION:|EXECUTION RESULT of \[[\w.-]+\]:|\[.*\]|\S+@\S+:.*[#$]|bash-\$|"
    r"\((?:Open file|Current directory): .*\)|Exit code:? ?\d+)$"
)
# Advice and progress around an error, never the error itself.
_NOT_THE_ERROR = re.compile(
    r"^(?:hint|note|tip|help|info|warning: (?:the|this)|To |Use |Run |Please report|Analysis "
    r"took|Checking |Running |Compiling |Finished |Generated |Getting |Executing |"
    r"=+|-+|\d+ (?:tests?|doctests?|examples?|mods/funs)\b|Randomized with seed|"
    r"Ran \d+ tests?|[\d.]+s? elapsed|Found \d+ errors? in)",
    re.IGNORECASE,
)
_LOCATION_LINE = re.compile(r"^[\s┃│|]*[\w./-]+\.\w+:\d+(?::\d+)?(?:\s|$)")
_BOX_DRAWING = re.compile(r"^[\s┃│|╷╵·•>]+")
_HARNESS_SUFFIX = re.compile(r"\[Python Interpreter: [^\]]*\]$")
_TOOL_USE_ERROR = re.compile(r"</?tool_use_error>")


def failed_exit(text: str) -> bool:
    """True when a tool output reports a non-zero exit code."""
    return _FAILED_EXIT.search(text) is not None


def error_lines(text: str, *, head_only: bool) -> list[str]:
    """The error lines of a tool output, verbatim; `head_only` scans only its first lines
    (the output of a file read: error words further down are the file's content)."""
    lines = [_clean(line) for line in _TOOL_USE_ERROR.sub("", text).splitlines()]
    lines = [line for line in lines if line.strip() and not _NOISE_LINE.match(line.strip())]
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
        elif _FAILING_TEST.match(line):
            found.append(line)
    unique = list(dict.fromkeys(_HARNESS_SUFFIX.sub("", line).strip() for line in found))
    return [cap(line, 300) for line in unique[:1] + unique[1:][-1:]]


def failure_line(text: str) -> str | None:
    """For a failed output with no error line: the line that best says what went wrong
    (failure words first, then the message a `file:line` location points at)."""
    lines = [_clean(line) for line in _TOOL_USE_ERROR.sub("", text).splitlines()]
    lines = [line.strip() for line in lines if line.strip()]
    best: tuple[int, int] | None = None
    for index, line in enumerate(lines):
        if _NOISE_LINE.match(line) or failed_exit(line):
            continue
        score = 0
        if _FAILURE_WORDS.search(line):
            score += 3
        if index + 1 < len(lines) and _LOCATION_LINE.match(lines[index + 1]):
            score += 2
        if _NOT_THE_ERROR.match(line):
            score -= 4
        if _LOCATION_LINE.match(line) and len(line.split()) <= 3:
            score -= 2
        if best is None or score > best[0]:
            best = (score, index)
    if best is None or best[0] < 0:
        return None
    return cap(_HARNESS_SUFFIX.sub("", lines[best[1]]).strip(), 300)


def _clean(line: str) -> str:
    # Linters draw boxes ("┃ [D] ↘ …"); the indentation left is enough to read frames.
    return _BOX_DRAWING.sub(" ", line.rstrip())


def _closes_traceback(lines: list[str], index: int, traceback_at: int) -> bool:
    """True for the exception line that closes a Python traceback: its last line."""
    line = lines[index]
    if index <= traceback_at or line[:1].isspace() or line.startswith(("Traceback", "During")):
        return False
    # Frames are indented; the first flush-left line after them names the exception.
    return lines[index - 1][:1].isspace()
