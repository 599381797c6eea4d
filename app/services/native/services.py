"""The native context-management services, built once per app."""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.clearing import DEFAULT_CLEAR_STEP_TOKENS
from app.formats.apis.protocol import VendorApi
from app.services.compaction import CompactionService
from app.services.cost_ledger import CostLedger
from app.services.estimation import EstimationService
from app.services.native.anthropic_edits import AnthropicEditsService
from app.services.native.compaction_state import CompactionStates
from app.services.native.ports import MessagesContextWire, ResponsesContextWire
from app.services.native.responses_compaction import ResponsesCompactionService
from app.services.native.signed_state import StateSigner


@dataclass(frozen=True, slots=True)
class NativeApis:
    """The vendor APIs with native context management, and their wire halves."""

    messages: VendorApi
    messages_wire: MessagesContextWire
    responses: VendorApi
    responses_wire: ResponsesContextWire


@dataclass(frozen=True, slots=True)
class NativeServices:
    anthropic: AnthropicEditsService
    responses: ResponsesCompactionService
    apis: NativeApis
    # True when no COMPACTOR_STATE_KEY is set: state lasts as long as this process.
    ephemeral_key: bool


def build_native_services(
    estimation: EstimationService,
    compaction: CompactionService,
    state_key: bytes | None,
    apis: NativeApis,
    clear_step_tokens: int = DEFAULT_CLEAR_STEP_TOKENS,
    ledger: CostLedger | None = None,
) -> NativeServices:
    """Both vendors' services sharing one state signer; Anthropic tool-use clearing in
    cache-aware steps of `clear_step_tokens` (0: the vendor's exact per-turn rule)."""
    signer = StateSigner(state_key)
    states = CompactionStates(signer, compaction.marker)
    return NativeServices(
        anthropic=AnthropicEditsService(
            estimation,
            compaction,
            states,
            apis.messages,
            apis.messages_wire,
            ledger=ledger,
            clear_step_tokens=clear_step_tokens,
        ),
        responses=ResponsesCompactionService(
            estimation, compaction, states, apis.responses, apis.responses_wire, ledger=ledger
        ),
        apis=apis,
        ephemeral_key=signer.ephemeral,
    )
