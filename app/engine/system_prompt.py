"""System prompt assembly (SPEC §8): body, prompt files, rules files, catalogues.

Pure: the caller supplies every candidate file's path and content; nothing here touches
the filesystem. Paths are POSIX and must be absolute.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from app.engine.errors import CompactorError

SourceKind = Literal[
    "base", "system_md", "append_system_md", "rules", "extension", "skills", "subagents"
]

BUILT_IN_PROMPT = """\
You are a coding agent working in the user's project through the tools you are given.
- Read a file before you change it, and keep each change as small as the task allows.
- Keep public interfaces and existing behaviour unless the user asks for something else.
- After a change, run the project's tests or checks and report what they showed, \
failures included.
- Ask before doing anything destructive or hard to undo, such as deleting files or \
rewriting version-control history.
- Be concise; quote paths, commands and error messages exactly."""

SYSTEM_FILE = "SYSTEM.md"
APPEND_SYSTEM_FILE = "APPEND_SYSTEM.md"
GLOBAL_RULES_FILES = ("AGENTS.md", "AGENTS.MD")
# One rules file per directory: the first of these that exists wins.
RULES_FILES = ("AGENTS.override.md", "AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")


class InvalidSystemPromptError(CompactorError):
    """The assembly request is not usable as given (a relative path, a duplicate file)."""


@dataclass(frozen=True, slots=True)
class CandidateFile:
    """A file the agent (or the workspace reader) found; `truncated` if only a prefix."""

    path: str
    content: str
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class SkillEntry:
    """A skill offered by catalogue; its `content` is never put in the prompt."""

    name: str
    description: str
    path: str
    content: str | None = None


@dataclass(frozen=True, slots=True)
class SubagentEntry:
    """A subagent offered by name, with what it is for."""

    name: str
    description: str


@dataclass(frozen=True, slots=True)
class SystemPromptRequest:
    """Everything the assembly reads; see SPEC §8 for each field."""

    cwd: str
    base_prompt: str | None = None
    files: tuple[CandidateFile, ...] = ()
    global_dir: str | None = None
    project_dir: str | None = None
    trusted: bool = False
    extension_contexts: tuple[str, ...] = ()
    skills: tuple[SkillEntry, ...] = ()
    read_tool_available: bool = False
    subagents: tuple[SubagentEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class PromptSource:
    """One contribution to the system prompt, in prompt order."""

    kind: SourceKind
    path: str | None
    tokens: int
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class AssembledSystemPrompt:
    system: str
    sources: tuple[PromptSource, ...]
    tokens: int


@dataclass(slots=True)
class _Parts:
    texts: list[str] = field(default_factory=list)
    sources: list[PromptSource] = field(default_factory=list)


def normalize_absolute(path: str, where: str) -> str:
    """`path` with `.`, `..` and repeated slashes folded lexically; refuses relative paths."""
    if not path.startswith("/"):
        raise InvalidSystemPromptError(
            f"{where}: {path!r} is not an absolute path; send a POSIX path starting with '/'"
        )
    if "\x00" in path:
        raise InvalidSystemPromptError(f"{where}: the path contains a NUL character")
    # normpath keeps a leading '//' (POSIX allows it a special meaning); we do not need it.
    return "/" + posixpath.normpath(path).lstrip("/")


def directory_chain(cwd: str) -> tuple[str, ...]:
    """Directories from the filesystem root down to `cwd` (normalized), farthest first."""
    here = PurePosixPath(normalize_absolute(cwd, "cwd"))
    return tuple(str(d) for d in (*reversed(here.parents), here))


def candidate_paths(
    cwd: str, global_dir: str | None, project_dir: str | None, trusted: bool
) -> tuple[str, ...]:
    """Every path assembly could use, for a reader that fetches the files itself."""
    paths: list[str] = []
    if global_dir is not None:
        base = PurePosixPath(normalize_absolute(global_dir, "global_dir"))
        names = (*GLOBAL_RULES_FILES, SYSTEM_FILE, APPEND_SYSTEM_FILE)
        paths.extend(str(base / name) for name in names)
    if project_dir is not None and trusted:
        base = PurePosixPath(normalize_absolute(project_dir, "project_dir"))
        paths.extend(str(base / name) for name in (SYSTEM_FILE, APPEND_SYSTEM_FILE))
    for directory in directory_chain(cwd):
        paths.extend(str(PurePosixPath(directory) / name) for name in RULES_FILES)
    return tuple(dict.fromkeys(paths))


def escape_xml(text: str) -> str:
    """Text safe inside an XML attribute value or element."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def assemble_system_prompt(
    request: SystemPromptRequest, count: Callable[[str], int]
) -> AssembledSystemPrompt:
    """The system prompt for `request`, and each source's tokens as counted by `count`."""
    cwd = normalize_absolute(request.cwd, "cwd")
    files = _index_files(request.files)
    global_dir = _optional_dir(request.global_dir, "global_dir")
    project_dir = _optional_dir(request.project_dir, "project_dir") if request.trusted else None
    prompt_dirs = [d for d in (project_dir, global_dir) if d is not None]
    parts = _Parts()

    def add(kind: SourceKind, path: str | None, text: str, truncated: bool = False) -> None:
        parts.texts.append(text)
        parts.sources.append(PromptSource(kind, path, count(text), truncated))

    system_md = _first_found(files, prompt_dirs, SYSTEM_FILE)
    working_dir = f"Current working directory: {cwd}"
    if system_md is not None:
        add("system_md", system_md.path, _body(system_md.content, working_dir), system_md.truncated)
    else:
        base = request.base_prompt if request.base_prompt is not None else BUILT_IN_PROMPT
        add("base", None, _body(base, working_dir))

    append_md = _first_found(files, prompt_dirs, APPEND_SYSTEM_FILE)
    if append_md is not None:
        add("append_system_md", append_md.path, append_md.content.rstrip(), append_md.truncated)

    rules = _rules_files(files, global_dir, cwd)
    if rules:
        elements = [_instructions_element(f) for f in rules]
        block = (
            "<project_context>\n\n"
            "Instructions for this project follow, from the most general location to the "
            "most specific:\n\n" + "".join(elements) + "</project_context>"
        )
        parts.texts.append(block)
        for rule, element in zip(rules, elements, strict=True):
            parts.sources.append(PromptSource("rules", rule.path, count(element), rule.truncated))

    for context in request.extension_contexts:
        if context.strip():  # a blank context would only add an empty paragraph
            add("extension", None, context)

    if request.read_tool_available and request.skills:
        add("skills", None, _skills_catalogue(request.skills))
    if request.subagents:
        add("subagents", None, _subagents_catalogue(request.subagents))

    system = "\n\n".join(parts.texts)
    return AssembledSystemPrompt(system=system, sources=tuple(parts.sources), tokens=count(system))


def _optional_dir(path: str | None, where: str) -> str | None:
    return None if path is None else normalize_absolute(path, where)


def _index_files(files: Iterable[CandidateFile]) -> dict[str, CandidateFile]:
    indexed: dict[str, CandidateFile] = {}
    for position, given in enumerate(files):
        path = normalize_absolute(given.path, f"files[{position}].path")
        if path in indexed:
            raise InvalidSystemPromptError(
                f"files[{position}].path: {path!r} is listed twice; send each file once"
            )
        indexed[path] = CandidateFile(path, given.content, given.truncated)
    return indexed


def _first_found(
    files: dict[str, CandidateFile], directories: Iterable[str], name: str
) -> CandidateFile | None:
    """The file called `name` in the first of `directories` that has one."""
    return _first_present(files, (PurePosixPath(d) / name for d in directories))


def _first_named(
    files: dict[str, CandidateFile], directory: str, names: Iterable[str]
) -> CandidateFile | None:
    """The first of `names` present in `directory`."""
    return _first_present(files, (PurePosixPath(directory) / name for name in names))


def _first_present(
    files: dict[str, CandidateFile], paths: Iterable[PurePosixPath]
) -> CandidateFile | None:
    return next((files[str(p)] for p in paths if str(p) in files), None)


def _rules_files(
    files: dict[str, CandidateFile], global_dir: str | None, cwd: str
) -> list[CandidateFile]:
    found = [_first_named(files, global_dir, GLOBAL_RULES_FILES)] if global_dir else []
    found.extend(_first_named(files, d, RULES_FILES) for d in directory_chain(cwd))
    # The global file may also lie on the path to cwd; it is included once, first.
    return list({f.path: f for f in found if f is not None}.values())


def _body(main: str, working_dir: str) -> str:
    main = main.rstrip()
    return f"{main}\n\n{working_dir}" if main else working_dir


def _instructions_element(rule: CandidateFile) -> str:
    return (
        f'<project_instructions path="{escape_xml(rule.path)}">\n'
        f"{rule.content}\n</project_instructions>\n\n"
    )


def _skills_catalogue(skills: Iterable[SkillEntry]) -> str:
    entries = "".join(
        f"<skill>\n<name>{escape_xml(s.name)}</name>\n"
        f"<description>{escape_xml(s.description)}</description>\n"
        f"<location>{escape_xml(s.path)}</location>\n</skill>\n"
        for s in skills
    )
    return (
        "<available_skills>\n"
        "Skills are files of instructions for particular kinds of task. When a task matches "
        "a skill's description, read its file with the read tool before you start; paths "
        "inside a skill file are relative to the directory that holds it.\n\n"
        f"{entries}</available_skills>"
    )


def _subagents_catalogue(subagents: Iterable[SubagentEntry]) -> str:
    entries = "".join(
        f"<subagent>\n<name>{escape_xml(a.name)}</name>\n"
        f"<description>{escape_xml(a.description)}</description>\n</subagent>\n"
        for a in subagents
    )
    return (
        "<available_subagents>\n"
        "Sub-agents can take on a self-contained task in their own context and report back. "
        "Pick one by the role its description gives.\n\n"
        f"{entries}</available_subagents>"
    )
