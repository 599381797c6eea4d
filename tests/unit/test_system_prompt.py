"""System prompt assembly: selection and rendering rules of SPEC §8."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from app.engine.system_prompt import (
    BUILT_IN_PROMPT,
    AssembledSystemPrompt,
    CandidateFile,
    InvalidSystemPromptError,
    SkillEntry,
    SubagentEntry,
    SystemPromptRequest,
    assemble_system_prompt,
    candidate_paths,
)

CWD = "/home/u/work/repo/pkg"
GLOBAL = "/home/u/.ink"
PROJECT = "/home/u/work/repo/pkg/.ink"


def words(text: str) -> int:
    return len(text.split())


def assemble(*files: tuple[str, str], **fields: Any) -> AssembledSystemPrompt:
    base = SystemPromptRequest(cwd=CWD, global_dir=GLOBAL, project_dir=PROJECT)
    candidates = tuple(CandidateFile(path, content) for path, content in files)
    return assemble_system_prompt(replace(base, files=candidates, **fields), words)


def rule_paths(result: AssembledSystemPrompt) -> list[str | None]:
    return [s.path for s in result.sources if s.kind == "rules"]


def test_no_files_gives_built_in_prompt_and_working_directory() -> None:
    result = assemble()
    assert result.system == f"{BUILT_IN_PROMPT}\n\nCurrent working directory: {CWD}"
    assert [(s.kind, s.path) for s in result.sources] == [("base", None)]
    assert result.tokens == words(result.system)


def test_base_prompt_replaces_built_in() -> None:
    result = assemble(base_prompt="Be brief.")
    assert result.system == f"Be brief.\n\nCurrent working directory: {CWD}"


def test_rules_rendering_follows_the_chapter() -> None:
    result = assemble((f"{CWD}/AGENTS.md", "Use tabs."), base_prompt="Base.")
    assert result.system == (
        f"Base.\n\nCurrent working directory: {CWD}\n\n<project_context>\n\n"
        "Instructions for this project follow, from the most general location to the "
        "most specific:\n\n"
        f'<project_instructions path="{CWD}/AGENTS.md">\nUse tabs.\n</project_instructions>\n\n'
        "</project_context>"
    )


def test_path_is_xml_escaped_and_content_is_not() -> None:
    odd = "/home/u/a&b<c>\"d'"
    result = assemble((f"{odd}/AGENTS.md", "x < y & z"), cwd=odd)
    assert (
        '<project_instructions path="/home/u/a&amp;b&lt;c&gt;&quot;d&apos;/AGENTS.md">\n'
        "x < y & z\n</project_instructions>"
    ) in result.system
    assert rule_paths(result) == [f"{odd}/AGENTS.md"]


def test_global_agents_first_then_farther_directories_first() -> None:
    result = assemble(
        (f"{CWD}/AGENTS.md", "near"),
        ("/AGENTS.md", "root"),
        ("/home/u/work/repo/CLAUDE.md", "repo"),
        (f"{GLOBAL}/AGENTS.md", "global"),
        ("/home/AGENTS.md", "home"),
    )
    assert rule_paths(result) == [
        f"{GLOBAL}/AGENTS.md",
        "/AGENTS.md",
        "/home/AGENTS.md",
        "/home/u/work/repo/CLAUDE.md",
        f"{CWD}/AGENTS.md",
    ]
    order = [result.system.index(t) for t in ("global", "root", "home\n", "repo\n", "near")]
    assert order == sorted(order)
    assert result.system.count("<project_context>") == 1


def test_contradictions_are_kept() -> None:
    result = assemble(("/home/u/AGENTS.md", "Use tabs."), (f"{CWD}/AGENTS.md", "Use spaces."))
    assert "Use tabs." in result.system and "Use spaces." in result.system


def test_files_below_or_beside_cwd_are_ignored() -> None:
    result = assemble(
        (f"{CWD}/sub/AGENTS.md", "below"),
        ("/home/u/work/repo/other/AGENTS.md", "sibling"),
        ("/home/u/work/repo/pkg2/AGENTS.md", "prefix sibling"),
        (f"{PROJECT}/AGENTS.md", "project dir is below cwd"),
        (f"{CWD}/README.md", "not a rules file"),
    )
    assert rule_paths(result) == []
    assert "<project_context>" not in result.system


@pytest.mark.parametrize(
    ("present", "chosen"),
    [
        (["AGENTS.override.md", "AGENTS.md", "CLAUDE.md"], "AGENTS.override.md"),
        (["AGENTS.md", "CLAUDE.md"], "AGENTS.md"),
        (["AGENTS.MD", "CLAUDE.md"], "AGENTS.MD"),
        (["CLAUDE.md"], "CLAUDE.md"),
        (["CLAUDE.MD"], "CLAUDE.MD"),
        (["AGENTS.md", "AGENTS.MD"], "AGENTS.md"),
        (["agents.md", "Claude.md"], None),
    ],
)
def test_one_rules_file_per_directory_by_precedence(present: list[str], chosen: str) -> None:
    result = assemble(*((f"{CWD}/{name}", f"from {name}") for name in present))
    assert rule_paths(result) == ([f"{CWD}/{chosen}"] if chosen else [])


def test_global_agents_in_upper_case_counts() -> None:
    result = assemble((f"{GLOBAL}/AGENTS.MD", "global"))
    assert rule_paths(result) == [f"{GLOBAL}/AGENTS.MD"]


def test_global_file_on_the_way_to_cwd_appears_once() -> None:
    result = assemble(("/home/u/AGENTS.md", "shared"), global_dir="/home/u")
    assert rule_paths(result) == ["/home/u/AGENTS.md"]


def test_untrusted_project_system_md_is_ignored_for_the_global_one() -> None:
    result = assemble(
        (f"{PROJECT}/SYSTEM.md", "project body"), (f"{GLOBAL}/SYSTEM.md", "global body")
    )
    assert result.system == f"global body\n\nCurrent working directory: {CWD}"
    assert [(s.kind, s.path) for s in result.sources] == [("system_md", f"{GLOBAL}/SYSTEM.md")]


def test_trusted_project_system_md_wins() -> None:
    result = assemble(
        (f"{PROJECT}/SYSTEM.md", "project body\n"),
        (f"{GLOBAL}/SYSTEM.md", "global body"),
        trusted=True,
    )
    assert result.system == f"project body\n\nCurrent working directory: {CWD}"
    assert result.sources[0].path == f"{PROJECT}/SYSTEM.md"


def test_untrusted_project_system_md_alone_keeps_the_base() -> None:
    result = assemble((f"{PROJECT}/SYSTEM.md", "project body"), base_prompt="Base.")
    assert result.system == f"Base.\n\nCurrent working directory: {CWD}"


def test_append_system_md_same_lookup_after_the_body() -> None:
    files = (
        (f"{PROJECT}/APPEND_SYSTEM.md", "project extra"),
        (f"{GLOBAL}/APPEND_SYSTEM.md", "global extra"),
        (f"{CWD}/AGENTS.md", "rules"),
    )
    untrusted = assemble(*files, base_prompt="Base.")
    assert untrusted.system.startswith(f"Base.\n\nCurrent working directory: {CWD}\n\nglobal extra")
    assert "project extra" not in untrusted.system
    trusted = assemble(*files, base_prompt="Base.", trusted=True)
    assert "project extra\n\n<project_context>" in trusted.system
    assert [s.kind for s in trusted.sources] == ["base", "append_system_md", "rules"]


def test_system_md_keeps_the_working_directory_line() -> None:
    result = assemble((f"{GLOBAL}/SYSTEM.md", "Custom."))
    assert f"Current working directory: {CWD}" in result.system
    assert BUILT_IN_PROMPT not in result.system


def test_skills_listed_only_with_a_read_tool_and_never_their_content() -> None:
    skills = (SkillEntry("pdf & forms", "Fill <PDF> forms", "/skills/pdf/SKILL.md", "SECRET"),)
    without = assemble(skills=skills)
    assert "pdf" not in without.system
    assert [s.kind for s in without.sources] == ["base"]
    with_tool = assemble(skills=skills, read_tool_available=True)
    assert "<name>pdf &amp; forms</name>" in with_tool.system
    assert "<description>Fill &lt;PDF&gt; forms</description>" in with_tool.system
    assert "<location>/skills/pdf/SKILL.md</location>" in with_tool.system
    assert "SECRET" not in with_tool.system
    assert [s.kind for s in with_tool.sources] == ["base", "skills"]


def test_subagents_catalogue() -> None:
    result = assemble(subagents=(SubagentEntry("reviewer", "Reviews diffs"),))
    assert "<name>reviewer</name>\n<description>Reviews diffs</description>" in result.system
    assert result.sources[-1].kind == "subagents"


def test_sources_in_order_with_kinds_and_tokens() -> None:
    result = assemble(
        (f"{GLOBAL}/SYSTEM.md", "Custom body."),
        (f"{GLOBAL}/APPEND_SYSTEM.md", "Appended."),
        (f"{GLOBAL}/AGENTS.md", "Global rules."),
        ("/home/u/work/AGENTS.md", "Work rules."),
        extension_contexts=("Extension one.", "", "Extension two."),
        skills=(SkillEntry("s", "d", "/s/SKILL.md"),),
        read_tool_available=True,
        subagents=(SubagentEntry("a", "b"),),
    )
    assert [(s.kind, s.path) for s in result.sources] == [
        ("system_md", f"{GLOBAL}/SYSTEM.md"),
        ("append_system_md", f"{GLOBAL}/APPEND_SYSTEM.md"),
        ("rules", f"{GLOBAL}/AGENTS.md"),
        ("rules", "/home/u/work/AGENTS.md"),
        ("extension", None),
        ("extension", None),
        ("skills", None),
        ("subagents", None),
    ]
    assert all(s.tokens > 0 for s in result.sources)
    assert result.sources[0].tokens == words(f"Custom body.\n\nCurrent working directory: {CWD}")
    texts = ["Custom body.", "Appended.", "Global rules.", "Work rules.", "Extension one."]
    positions = [result.system.index(t) for t in [*texts, "Extension two.", "<available_skills>"]]
    assert positions == sorted(positions)
    assert result.system.endswith("</available_subagents>")
    assert result.tokens == words(result.system)


def test_paths_are_normalized_lexically() -> None:
    result = assemble(("/home/u/work//repo/./AGENTS.md", "r"), cwd="/home/u/work/repo/pkg/../")
    assert rule_paths(result) == ["/home/u/work/repo/AGENTS.md"]
    assert "Current working directory: /home/u/work/repo\n" in result.system


def test_root_cwd() -> None:
    result = assemble(("/AGENTS.md", "root rules"), ("/home/AGENTS.md", "below"), cwd="/")
    assert rule_paths(result) == ["/AGENTS.md"]


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"cwd": "repo/pkg"}, "cwd"),
        ({"global_dir": "~/.ink"}, "global_dir"),
        ({"files": (CandidateFile("AGENTS.md", "x"),)}, "files[0].path"),
    ],
)
def test_relative_paths_are_refused(fields: dict[str, Any], where: str) -> None:
    request = replace(SystemPromptRequest(cwd=CWD), **fields)
    with pytest.raises(InvalidSystemPromptError, match=f"^{re.escape(where)}: .*absolute"):
        assemble_system_prompt(request, words)


def test_duplicate_files_are_refused() -> None:
    with pytest.raises(InvalidSystemPromptError, match="listed twice"):
        assemble((f"{CWD}/AGENTS.md", "a"), (f"{CWD}//AGENTS.md", "b"))


def test_candidate_paths_cover_every_lookup() -> None:
    paths = candidate_paths("/r/p", "/g", "/r/p/.ink", trusted=True)
    assert paths[:6] == (
        "/g/AGENTS.md",
        "/g/AGENTS.MD",
        "/g/SYSTEM.md",
        "/g/APPEND_SYSTEM.md",
        "/r/p/.ink/SYSTEM.md",
        "/r/p/.ink/APPEND_SYSTEM.md",
    )
    assert "/AGENTS.override.md" in paths and "/r/p/CLAUDE.MD" in paths
    assert not any(
        p.startswith("/r/p/.ink") for p in candidate_paths("/r/p", None, "/r/p/.ink", False)
    )
