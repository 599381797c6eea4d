"""Text-action agents: actions written in assistant text, tool output sent back as `user`.

OpenHands (and swe_play) write tool calls inline as `<function=name><parameter=k>v
</parameter></function>` and get `EXECUTION RESULT of [name]:` back as a user message;
SWE-agent ends its message with one fenced command (`create f.py`, `edit 1:5 … end_of_edit`,
`open path 120`, any shell command) and gets the output, closed by its `(Open file: …)` /
`(Current directory: …)` / `bash-$` footer, as a user message. Those user messages are
observations: never the user's words. In-context demonstrations ("Here is a demonstration
…", "--- START OF EXAMPLE ---") are not the user's words either.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_FUNCTION = re.compile(r"<function=([\w.-]+)>(.*?)(?:</function>|\Z)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([\w.-]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL)
# The last fenced block of a message, with nothing but whitespace after it.
_FINAL_FENCE = re.compile(r"```[\w-]*\n(.*?)\n?```\s*\Z", re.DOTALL)
_COMMAND_WORD = re.compile(r"^[a-z_][\w.-]*(?:\s|$)")
_OBSERVATION_PREFIX = re.compile(
    r"^\s*(?:EXECUTION RESULT of \[[\w.-]+\]:|OBSERVATION:|Observation:|\[File: [^\]\n]+\])"
)
_OBSERVATION_FOOTER = re.compile(
    r"(?:\(Open file: [^)\n]*\)\s*\n\s*\(Current directory: [^)\n]*\)\s*\n?\s*bash-\$\s*\Z|"
    r"\bbash-\$\s*\Z)"
)
_OPEN_FILE = re.compile(r"\(Open file: ([^)\n]+)\)")
_FILE_HEADER = re.compile(r"^\[File: (\S+) \(\d+ lines total\)\]", re.MULTILINE)
_DEMO_START = re.compile(
    r"^[ \t]*-{2,}[ \t]*(?:START OF (?:THE )?EXAMPLE|BEGIN(?:NING)? OF (?:THE )?(?:EXAMPLE|"
    r"DEMONSTRATION)|DEMONSTRATION|EXAMPLE)[ \t]*-{2,}[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_DEMO_END = re.compile(
    r"^[ \t]*-{2,}[ \t]*END OF (?:THE )?(?:EXAMPLE|DEMONSTRATION)[ \t]*-{2,}[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_DEMO_INTRO = re.compile(r"\b(?:example|demonstration)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class TextAction:
    """An action written in assistant text: a tool name and its arguments as JSON."""

    name: str
    arguments: str
    # True for OpenHands-style calls, which always get an observation back; a fenced
    # command only counts as answered when the reply looks like one.
    explicit: bool


def text_actions(text: str) -> list[TextAction]:
    """The actions in assistant `text`: inline function calls, else a final fenced command."""
    found = []
    for match in _FUNCTION.finditer(text):
        params = {k: v.strip("\n") for k, v in _PARAMETER.findall(match.group(2))}
        found.append(TextAction(match.group(1), json.dumps(params), explicit=True))
    if found:
        return found
    fence = _FINAL_FENCE.search(text)
    if fence is None or not _COMMAND_WORD.match(fence.group(1).strip()):
        return []
    return [_fenced_command(fence.group(1).strip())]


def _fenced_command(command: str) -> TextAction:
    first, _, rest = command.partition("\n")
    word, _, args = first.strip().partition(" ")
    args = args.strip()
    if word == "create" and args:
        return TextAction("create", json.dumps({"path": args.split()[0]}), explicit=False)
    if word == "open" and args:
        return TextAction("open", json.dumps({"path": args.split()[0]}), explicit=False)
    if word in ("edit", "insert", "append"):
        return TextAction(word, json.dumps({"text": rest}), explicit=False)
    if word in ("goto", "scroll_down", "scroll_up"):
        return TextAction(word, "{}", explicit=False)
    if word in ("search_dir", "search_file", "find_file"):
        return TextAction("grep", json.dumps({"pattern": args}), explicit=False)
    if word == "str_replace_editor":
        parts = args.split()
        editor = {"command": parts[0], "path": parts[1]} if len(parts) >= 2 else {}
        return TextAction(word, json.dumps(editor), explicit=False)
    if word == "submit":
        return TextAction("submit", "{}", explicit=False)
    return TextAction("bash", json.dumps({"command": command}), explicit=False)


def is_observation(text: str, after: list[TextAction]) -> bool:
    """True when user `text` is tool output: it has an observation's shape, or it answers
    an inline function call of the assistant message before it."""
    if _OBSERVATION_PREFIX.match(text):
        return True
    if not after:
        return False
    return any(a.explicit for a in after) or _OBSERVATION_FOOTER.search(text) is not None


def open_file_of(text: str) -> str | None:
    """The file an observation says is open (`[File: …]` header or `(Open file: …)`)."""
    header = _FILE_HEADER.search(text)
    if header:
        return str(header.group(1))
    footer: list[str] = _OPEN_FILE.findall(text)
    if footer and footer[-1].strip() not in ("n/a", ""):
        return footer[-1].strip()
    return None


def without_demonstrations(text: str) -> str:
    """User text without the in-context examples it carries (and their introduction)."""
    while True:
        start = _DEMO_START.search(text)
        if start is None:
            return text
        end = _DEMO_END.search(text, start.end())
        begin = start.start()
        before = text[:begin].rstrip()
        paragraph = before.rfind("\n\n")
        intro = before[paragraph + 1 :] if paragraph >= 0 else before
        if _DEMO_INTRO.search(intro):
            begin = paragraph + 1 if paragraph >= 0 else 0
        text = text[:begin] + (text[end.end() :] if end else "")
