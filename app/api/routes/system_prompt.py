"""System prompt assembly: body, prompt files, rules files and catalogues."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import SystemPrompts
from app.api.mappers.system import system_prompt_out, system_prompt_request
from app.api.problems import documented
from app.api.routing import OrjsonRoute
from app.api.schemas.system import SystemPromptIn, SystemPromptOut
from app.engine.system_prompt import InvalidSystemPromptError
from app.services.workspace import WorkspaceAccessError

router = APIRouter(tags=["context"], route_class=OrjsonRoute)

_ERRORS = documented(InvalidSystemPromptError, WorkspaceAccessError)


@router.post("/context/system", response_model=SystemPromptOut, responses=_ERRORS)
def assemble_system(body: SystemPromptIn, system_prompts: SystemPrompts) -> SystemPromptOut:
    """Assemble a system prompt; without `files` it reads the workspace roots, or uses none."""
    result = system_prompts.assemble(
        system_prompt_request(body),
        files_given=body.files is not None,
        model=body.model,
        tokenizer=body.tokenizer,
    )
    return system_prompt_out(result)
