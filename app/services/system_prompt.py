"""The system-prompt use case (SPEC §8): pick the tokenizer, gather the prompt files (given
by the caller, or read from the configured workspace roots), assemble."""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.engine.system_prompt import (
    AssembledSystemPrompt,
    SystemPromptRequest,
    assemble_system_prompt,
)
from app.services.estimation import EstimationService
from app.services.workspace import WorkspaceReader


@dataclass(frozen=True, slots=True)
class SystemPromptResult:
    assembled: AssembledSystemPrompt
    encoding: str


class SystemPromptService:
    def __init__(self, estimation: EstimationService, workspace: WorkspaceReader) -> None:
        self._estimation = estimation
        self._workspace = workspace

    def assemble(
        self,
        request: SystemPromptRequest,
        *,
        files_given: bool,
        model: str | None,
        tokenizer: str,
    ) -> SystemPromptResult:
        """The assembled prompt; without `files_given`, the files come from the workspace
        roots (none when no root is configured)."""
        if not files_given and self._workspace.configured:
            files = self._workspace.read_candidates(
                request.cwd, request.global_dir, request.project_dir, request.trusted
            )
            request = replace(request, files=files)
        choice = self._estimation.choose_tokenizer(model, tokenizer)
        assembled = assemble_system_prompt(request, choice.tokenizer.count)
        return SystemPromptResult(assembled, choice.tokenizer.name)
