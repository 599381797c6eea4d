"""The native context-management services, built once per app."""

from __future__ import annotations

from dataclasses import dataclass

from app.services.compaction import CompactionService
from app.services.estimation import EstimationService
from app.services.native.anthropic_edits import AnthropicEditsService
from app.services.native.compaction_state import CompactionStates
from app.services.native.responses_compaction import ResponsesCompactionService
from app.services.native.signed_state import StateSigner


@dataclass(frozen=True, slots=True)
class NativeServices:
    anthropic: AnthropicEditsService
    responses: ResponsesCompactionService
    # True when no COMPACTOR_STATE_KEY is set: state lasts as long as this process.
    ephemeral_key: bool


def build_native_services(
    estimation: EstimationService, compaction: CompactionService, state_key: bytes | None
) -> NativeServices:
    """Both vendors' services sharing one state signer."""
    signer = StateSigner(state_key)
    states = CompactionStates(signer, compaction.marker)
    return NativeServices(
        anthropic=AnthropicEditsService(estimation, compaction, states),
        responses=ResponsesCompactionService(estimation, compaction, states),
        ephemeral_key=signer.ephemeral,
    )
