"""System prompt assembly: body, prompt files, rules files and catalogues."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import State
from app.api.problems import Problem
from app.api.routing import OrjsonRoute
from app.api.schemas.system import SourceOut, SystemPromptIn, SystemPromptOut
from app.engine.system_prompt import (
    AssembledSystemPrompt,
    CandidateFile,
    SkillEntry,
    SubagentEntry,
    SystemPromptRequest,
    assemble_system_prompt,
)
from app.services.workspace import WorkspaceReader, parse_workspace_roots

router = APIRouter(tags=["context"], route_class=OrjsonRoute)

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Problem, "description": "Malformed JSON"},
    403: {"model": Problem, "description": "A path leaves the allowed workspace roots"},
    413: {"model": Problem, "description": "Body over the size limit"},
    422: {"model": Problem, "description": "The body is invalid (e.g. a relative cwd)"},
}


@router.post("/context/system", response_model=SystemPromptOut, responses=_ERRORS)
def assemble_system(body: SystemPromptIn, state: State) -> SystemPromptOut:
    """Assemble a system prompt; without `files` it reads the workspace roots, or uses none."""
    choice = state.estimation.choose_tokenizer(body.model, body.tokenizer)
    request = _request(body, _files(body, state.settings.workspace_roots))
    return _answer(assemble_system_prompt(request, choice.tokenizer.count), choice.tokenizer.name)


def _files(body: SystemPromptIn, workspace_roots: str | None) -> tuple[CandidateFile, ...]:
    if body.files is not None:
        return tuple(CandidateFile(path=f.path, content=f.content) for f in body.files)
    reader = WorkspaceReader(parse_workspace_roots(workspace_roots))
    if not reader.configured:
        return ()
    return reader.read_candidates(body.cwd, body.global_dir, body.project_dir, body.trusted)


def _request(body: SystemPromptIn, files: tuple[CandidateFile, ...]) -> SystemPromptRequest:
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


def _answer(assembled: AssembledSystemPrompt, encoding: str) -> SystemPromptOut:
    sources = [
        SourceOut(kind=s.kind, path=s.path, tokens=s.tokens, truncated=s.truncated)
        for s in assembled.sources
    ]
    return SystemPromptOut(
        system=assembled.system, sources=sources, tokens=assembled.tokens, encoding=encoding
    )
