"""What one tool call did, in a few words: the action line and the files it read or changed.

Knows the tool vocabularies of Claude Code (Read, Edit, Bash, ...), OpenHands and SWE-agent
(`str_replace_editor`, `execute_bash`), Anthropic's text editor tool and Codex (`shell`,
`apply_patch`); any other tool becomes "called `name`" with its most telling argument.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from app.engine.extractive.text import cap, code_span

_PATH_KEYS = (
    "file_path",
    "path",
    "filename",
    "file_name",
    "notebook_path",
    "file",
    "target_file",
)
_COMMAND_KEYS = ("command", "cmd")
_TELLING_KEYS = ("description", "query", "url", "pattern", "command", "cmd", "code", "prompt")

_READ_TOOLS = frozenset(
    {"read", "read_file", "readfile", "view_file", "open_file", "cat", "open", "view"}
)
_WRITE_TOOLS = frozenset({"write", "write_file", "writefile", "create_file", "create"})
_EDIT_TOOLS = frozenset(
    {"edit", "multiedit", "notebookedit", "edit_file", "replace", "replace_in_file", "insert"}
)
# SWE-agent's editor acts on the file it has open: `edit`, `insert`, `append`, `goto`, …
_OPEN_FILE_EDITS = frozenset({"edit", "insert", "append"})
_OPEN_FILE_MOVES = frozenset({"goto", "scroll_down", "scroll_up"})
_SHELL_TOOLS = frozenset(
    {
        "bash",
        "execute_bash",
        "shell",
        "run_shell_command",
        "run_command",
        "run_terminal_cmd",
        "terminal",
        "exec_command",
        "local_shell",
        "execute_command",
    }
)
_SEARCH_TOOLS = frozenset(
    {"grep", "search", "search_files", "grep_search", "find", "find_file", "search_dir"}
)
_WEB_SEARCH_TOOLS = frozenset({"websearch", "web_search"})
_WEB_FETCH_TOOLS = frozenset({"webfetch", "web_fetch", "fetch"})
# Planning and thinking tools change nothing; listing them would bury the real work.
_BOOKKEEPING_TOOLS = frozenset(
    {"todowrite", "todoread", "think", "exitplanmode", "finish", "submit", "task_tracker"}
)
# The text editor command set shared by OpenHands, SWE-agent and Anthropic's editor tool.
_EDITOR_VERBS = {
    "view": "read",
    "create": "created",
    "str_replace": "edited",
    "insert": "edited",
    "undo_edit": "undid an edit to",
}
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
_SHELL_WRAPPERS = frozenset({"bash", "sh", "zsh"})


@dataclass(frozen=True, slots=True)
class ToolCallSummary:
    """One tool call seen from a summary: its Done line and the files it touched."""

    # None for bookkeeping tools that are not worth a Done line.
    action: str | None
    files_read: tuple[str, ...] = ()
    files_modified: tuple[str, ...] = ()
    # The output is file or search content, so error words in it are not the tool's errors.
    shows_content: bool = False


def describe_tool_call(
    name: str | None, arguments: str, open_file: str | None = None
) -> ToolCallSummary:
    """The Done line and touched files of a call to tool `name` with JSON `arguments`;
    `open_file` is the file an editor that keeps one open (SWE-agent) acts on."""
    args = _parsed_arguments(arguments)
    tool = _tool_key(name or "")
    # A path is one line; joining stray line breaks keeps the lists equal to what is shown.
    path = " ".join(_first_text(args, _PATH_KEYS).splitlines())
    if not path and open_file and tool in _OPEN_FILE_EDITS:
        path = open_file
    if not path and open_file and tool in _OPEN_FILE_MOVES:
        return ToolCallSummary(None, files_read=(open_file,), shows_content=True)
    editor_command = _text(args, "command")
    if path and editor_command in _EDITOR_VERBS:
        return _editor_call(_EDITOR_VERBS[editor_command], path)
    if tool in _BOOKKEEPING_TOOLS:
        return ToolCallSummary(action=None)
    if path and tool in _READ_TOOLS:
        return ToolCallSummary(f"read {code_span(path)}", files_read=(path,), shows_content=True)
    if path and tool in _WRITE_TOOLS:
        return ToolCallSummary(f"wrote {code_span(path)}", files_modified=(path,))
    if path and tool in _EDIT_TOOLS:
        return ToolCallSummary(f"edited {code_span(path)}", files_modified=(path,))
    patched = _patched_files(args)
    if patched:
        listed = ", ".join(code_span(p) for p in patched)
        return ToolCallSummary(f"patched {listed}", files_modified=patched)
    return _search_call(tool, args) or _command_call(tool, args, path, name or "tool")


def call_target(arguments: str) -> str:
    """What a call worked on, in a few words: its path, command, pattern or query."""
    args = _parsed_arguments(arguments)
    path = " ".join(_first_text(args, _PATH_KEYS).splitlines())
    target = path or _command_text(args) or _first_text(args, _TELLING_KEYS)
    return _short(target) if target else ""


def _editor_call(verb: str, path: str) -> ToolCallSummary:
    if verb == "read":
        return ToolCallSummary(f"read {code_span(path)}", files_read=(path,), shows_content=True)
    return ToolCallSummary(f"{verb} {code_span(path)}", files_modified=(path,))


def _search_call(tool: str, args: dict[str, Any]) -> ToolCallSummary | None:
    pattern = _first_text(args, ("pattern", "query", "regex", "url"))
    if not pattern:
        return None
    shown = code_span(_short(pattern))
    if tool == "glob":
        return ToolCallSummary(f"listed files matching {shown}", shows_content=True)
    if tool in _WEB_SEARCH_TOOLS:
        return ToolCallSummary(f"searched the web for {shown}", shows_content=True)
    if tool in _WEB_FETCH_TOOLS:
        return ToolCallSummary(f"fetched {shown}", shows_content=True)
    if tool not in _SEARCH_TOOLS:
        return None
    where = _first_text(args, _PATH_KEYS)
    scope = f" in {code_span(where)}" if where else ""
    return ToolCallSummary(f"searched for {shown}{scope}", shows_content=True)


def _command_call(tool: str, args: dict[str, Any], path: str, name: str) -> ToolCallSummary:
    command = _command_text(args)
    if command and (tool in _SHELL_TOOLS or tool.endswith("bash")):
        writes = shell_writes(command)
        reads = shell_reads(command) if not writes else ()
        return ToolCallSummary(
            f"ran {code_span(_short(command))}",
            files_read=reads,
            files_modified=writes,
            shows_content=bool(reads),
        )
    code = _text(args, "code")
    if code and "python" in tool:
        return ToolCallSummary(f"ran Python {code_span(_short(code))}")
    if path and re.search(r"write|edit|create|replace|patch|insert|update|delete", tool):
        return ToolCallSummary(f"{name} {code_span(path)}", files_modified=(path,))
    if path and re.search(r"read|view|open|get|show", tool):
        return ToolCallSummary(f"{name} {code_span(path)}", files_read=(path,), shows_content=True)
    telling = path or _first_text(args, _TELLING_KEYS) or command
    detail = f": {code_span(_short(telling))}" if telling else ""
    return ToolCallSummary(f"called {code_span(name)}{detail}")


def _parsed_arguments(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        # Streaming or truncated calls can carry half a JSON object: read it as empty.
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _tool_key(name: str) -> str:
    # MCP tools are named `mcp__server__tool`; the last part says what they do.
    return name.rsplit("__", 1)[-1].strip().casefold()


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    return value.strip() if isinstance(value, str) else ""


def _first_text(args: dict[str, Any], keys: tuple[str, ...]) -> str:
    return next((text for text in (_text(args, key) for key in keys) if text), "")


def _command_text(args: dict[str, Any]) -> str:
    for key in _COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            # Codex sends ["bash", "-lc", "<script>"]: the script is the command.
            if len(value) >= 3 and value[0] in _SHELL_WRAPPERS and value[1] in ("-c", "-lc"):
                return str(value[-1]).strip()
            return " ".join(value)
    return ""


def _patched_files(args: dict[str, Any]) -> tuple[str, ...]:
    texts = [v for v in args.values() if isinstance(v, str)]
    texts += [_command_text(args)]
    found = [m.strip() for text in texts for m in _PATCH_FILE.findall(text)]
    return tuple(dict.fromkeys(found))


def _short(text: str) -> str:
    """A command or pattern shown on one line: its first line, capped."""
    lines = text.strip().splitlines() or [""]
    first = lines[0].strip()
    return cap(first, 160) if len(lines) == 1 else cap(first, 160).rstrip(" …") + " …"


# Shell commands that write a file: redirections, `sed -i`, `tee`, `mv`/`cp` targets, `touch`.
_REDIRECT = re.compile(r"(?<![\d&<>])>>?\s*(['\"]?)([^\s;&|<>'\"()]+)\1")
_SEGMENT = re.compile(r"\s*(?:&&|\|\||;|\||\n)\s*")
_HEREDOC_BODY = re.compile(r"<<-?\s*(['\"]?)(\w+)\1.*?^\2\s*$", re.DOTALL | re.MULTILINE)
_READ_COMMANDS = frozenset({"cat", "head", "tail", "less", "more", "nl", "bat"})
_NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "-"})


def shell_writes(command: str) -> tuple[str, ...]:
    """Files a shell command writes (created or changed), in order."""
    # A heredoc's body is data; only its command line says where it goes.
    script = _HEREDOC_BODY.sub("", command)
    found = [m.group(2) for m in _REDIRECT.finditer(script)]
    for words in _segments(script):
        verb, args = words[0], [w for w in words[1:] if not w.startswith("-")]
        if verb == "sed" and any(w.startswith(("-i", "--in-place")) for w in words[1:]):
            found.extend(args[1:] if "-e" not in words and "--expression" not in words else args)
        elif verb == "tee":
            found.extend(args)
        elif (verb in ("mv", "cp", "install") and len(args) >= 2) or (
            verb == "git" and len(args) >= 3 and args[0] == "mv"
        ):
            found.append(args[-1])
        elif verb == "touch":
            found.extend(args)
    return tuple(dict.fromkeys(p for p in found if _is_file_path(p)))


def shell_reads(command: str) -> tuple[str, ...]:
    """Files a shell command shows (`cat`, `head`, `tail` …), in order."""
    found: list[str] = []
    for words in _segments(command):
        if words[0] in _READ_COMMANDS:
            found.extend(w for w in words[1:] if not w.startswith("-") and not w.isdigit())
    return tuple(dict.fromkeys(p for p in found if _is_file_path(p)))


def _segments(script: str) -> list[list[str]]:
    found = []
    for segment in _SEGMENT.split(script.strip()):
        words = [w.strip("'\"") for w in segment.split()]
        while words and (words[0] in ("sudo", "cd", "env") or "=" in words[0]):
            # `cd dir && …` is its own segment; a leading VAR=value is not the verb.
            words = [] if words[0] == "cd" else words[1:]
        if words:
            found.append(words)
    return found


def _is_file_path(text: str) -> bool:
    if text in _NOT_FILES or text.startswith(("&", "$(", "`")) or text.endswith("/"):
        return False
    return bool(re.fullmatch(r"[\w./~+@%-]+", text)) and bool(re.search(r"[\w]\.?\w", text))
