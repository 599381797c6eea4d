"""Mappers between the system-prompt HTTP bodies and the engine's request and answer."""

from __future__ import annotations

from app.api.schemas.system import SourceOut, SystemPromptIn, SystemPromptOut
from app.engine.system_prompt import (
    CandidateFile,
    SkillEntry,
    SubagentEntry,
    SystemPromptRequest,
)
from app.services.system_prompt import SystemPromptResult


def system_prompt_request(body: SystemPromptIn) -> SystemPromptRequest:
    files = tuple(CandidateFile(path=f.path, content=f.content) for f in body.files or ())
    return SystemPromptRequest(
        cwd=body.cwd,
        base_prompt=body.base_prompt,
        files=files,
        global_dir=body.global_dir,
        project_dir=body.project_dir,
        trusted=body.trusted,
        extension_contexts=tuple(body.extension_contexts),
        skills=tuple(SkillEntry(s.name, s.description, s.path, s.content) for s in body.skills),
        read_tool_available=body.read_tool_available,
        subagents=tuple(SubagentEntry(a.name, a.description) for a in body.subagents),
    )


def system_prompt_out(result: SystemPromptResult) -> SystemPromptOut:
    assembled = result.assembled
    sources = [
        SourceOut(kind=s.kind, path=s.path, tokens=s.tokens, truncated=s.truncated)
        for s in assembled.sources
    ]
    return SystemPromptOut(
        system=assembled.system, sources=sources, tokens=assembled.tokens, encoding=result.encoding
    )
