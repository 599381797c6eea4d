"""Request and response bodies of POST /context/system (SPEC §8)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.names import DEFAULT_TOKENIZER, TokenizerName

PATH_MAX = 4096
SourceKindOut = Literal[
    "base", "system_md", "append_system_md", "rules", "extension", "skills", "subagents"
]


class _Strict(BaseModel):
    # A misspelt flag (say `read_tools_available`) would silently change the prompt.
    model_config = ConfigDict(extra="forbid")


class CandidateFileIn(_Strict):
    """A file the agent found: rules files anywhere, prompt files."""

    path: str = Field(min_length=1, max_length=PATH_MAX, description="Absolute POSIX path.")
    content: str


class SkillIn(_Strict):
    name: str = Field(min_length=1, max_length=200)
    description: str
    path: str = Field(min_length=1, max_length=PATH_MAX)
    content: str | None = Field(default=None, description="Accepted, never put in the prompt.")


class SubagentIn(_Strict):
    name: str = Field(min_length=1, max_length=200)
    description: str


class SystemPromptIn(_Strict):
    """Body of POST /context/system."""

    cwd: str = Field(min_length=1, max_length=PATH_MAX, description="Absolute POSIX path.")
    base_prompt: str | None = Field(
        default=None, description="Replaces the built-in working instructions."
    )
    files: list[CandidateFileIn] | None = Field(
        default=None,
        description="Candidate files; omit to let the service read them from its workspace "
        "roots (no files when none are configured).",
    )
    global_dir: str | None = Field(default=None, min_length=1, max_length=PATH_MAX)
    project_dir: str | None = Field(default=None, min_length=1, max_length=PATH_MAX)
    trusted: bool = Field(default=False, description="May project-level prompt files be used.")
    extension_contexts: list[str] = Field(default_factory=list)
    skills: list[SkillIn] = Field(default_factory=list)
    read_tool_available: bool = Field(
        default=False, description="Skills are listed only when the agent has a read tool."
    )
    subagents: list[SubagentIn] = Field(default_factory=list)
    model: str | None = Field(
        default=None, max_length=200, description="Chooses the tokenizer, as in /estimate."
    )
    tokenizer: TokenizerName = DEFAULT_TOKENIZER


class SourceOut(BaseModel):
    kind: SourceKindOut
    path: str | None
    tokens: int
    truncated: bool = Field(
        default=False, description="Only the first part of the file was read (size bound)."
    )


class SystemPromptOut(BaseModel):
    """The assembled system prompt and where each part came from, in order."""

    system: str
    sources: list[SourceOut]
    tokens: int
    encoding: str = Field(description="The tokenizer that counted the tokens.")
