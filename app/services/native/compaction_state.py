"""What a native compaction hands the caller, and how a request that carries it is rebuilt.

The state is the compacted history split in three: `head` (inline system messages kept in
front), `summary` (the summary text; None when nothing was summarized) and `kept` (the
recent messages kept verbatim, as received). It travels signed inside the vendor's
compaction block or item; sent back, it is rebuilt as head + summary message + kept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.thresholds import (
    DEFAULT_KEEP_RECENT_TOKENS,
    keep_recent_for_threshold,
)
from app.engine.errors import CompactionRequestError, CompactionStateError, NothingToCompactError
from app.engine.native_edits import CompactionReport
from app.engine.ports import CallerGone
from app.formats.apis.protocol import RequestEnvelope, VendorApi
from app.formats.registry import FORMATS
from app.services.compaction import CompactionService
from app.services.cost_ledger import CostLedger
from app.services.estimation import CountedHistory, EstimationService
from app.services.history import CompactOptions, HistoryInput, request_history
from app.services.native.signed_state import StateSigner


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class CompactionState:
    head: tuple[Any, ...]
    summary: str | None
    kept: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class CompactedNatively:
    compaction: CompactionReport
    messages: list[Any]
    # The count of `messages` (built from the parts already counted).
    counted: CountedHistory


class CompactionStates:
    """Seals, opens and rebuilds compaction state."""

    def __init__(self, signer: StateSigner, marker: SummaryMarker | None = None) -> None:
        self.signer = signer
        self.marker = marker or SummaryMarker()

    def seal(self, state: CompactionState, tenant: str) -> str:
        payload = {"head": list(state.head), "summary": state.summary, "kept": list(state.kept)}
        return self.signer.seal(payload, tenant)

    def is_ours(self, token: str) -> bool:
        return self.signer.is_ours(token)

    def open(self, token: str, tenant: str, where: str) -> CompactionState:
        """The state sealed in `token`; CompactionStateError when it is not ours."""
        payload = self.signer.open(token, tenant, where)
        if not isinstance(payload, dict):
            raise CompactionStateError(f"{where}: unreadable compaction state")
        head, summary, kept = payload.get("head"), payload.get("summary"), payload.get("kept")
        if not isinstance(head, list) or not isinstance(kept, list):
            raise CompactionStateError(f"{where}: unreadable compaction state")
        if summary is not None and not isinstance(summary, str):
            raise CompactionStateError(f"{where}: unreadable compaction state")
        return CompactionState(tuple(head), summary, tuple(kept))

    def sign_summary(self, summary: str, tenant: str) -> str:
        """An on-demand compaction block's `signature`: the summary's digest, sealed."""
        return self.signer.seal({"summary_sha256": _digest(summary)}, tenant)

    def check_signature(self, signature: str, content: str, tenant: str, where: str) -> None:
        """Refuses a block whose signature is not ours (`compaction_signature_invalid`) or
        whose content is not the summary it signed (`compaction_content_mismatch`)."""
        try:
            payload = self.signer.open(signature, tenant, where)
        except CompactionStateError as exc:
            raise CompactionRequestError(
                f"{where}: the compaction block's signature does not verify ({exc}); send "
                "the block back exactly as it was returned",
                code="compaction_signature_invalid",
            ) from None
        signed = payload.get("summary_sha256") if isinstance(payload, dict) else None
        if signed != _digest(content):
            raise CompactionRequestError(
                f"{where}: the compaction block's content is not the summary its signature "
                "recorded; send the content back unedited",
                code="compaction_content_mismatch",
            )

    def summary_message(self, summary: str, format_name: str) -> Any:
        """The summary as a message of `format_name`, marked so a later compaction updates
        it instead of summarizing a summary."""
        return FORMATS.get(format_name).summary_message(self.marker.render(summary))

    def rebuild(self, state: CompactionState, format_name: str) -> list[Any]:
        """The history a compaction state stands for, without the cache breakpoints its
        messages had in the request that was compacted (they belonged to that request)."""
        summary = (
            [self.summary_message(state.summary, format_name)] if state.summary is not None else []
        )
        wire = FORMATS.get(format_name)
        return wire.without_cache_breakpoints([*state.head, *summary, *state.kept])


W = TypeVar("W")


@dataclass(frozen=True)
class NativeService(Generic[W]):
    """What a vendor's native service works with: counting, compaction, sealed state,
    the vendor API and its native wire."""

    estimation: EstimationService
    compaction: CompactionService
    states: CompactionStates
    api: VendorApi
    wire: W
    # Bills the summary calls of native compactions to the tenant (SPEC §15); None: off.
    ledger: CostLedger | None = None

    def request_history(self, envelope: RequestEnvelope, messages: Sequence[Any]) -> HistoryInput:
        """`messages` as the history of the request `envelope` was read from, in this
        API's format."""
        return request_history(self.api.format, envelope, messages)

    async def compact_natively(
        self,
        history: HistoryInput,
        tenant: str,
        caller_gone: CallerGone = lambda: False,
        counted: CountedHistory | None = None,
        instructions: str | None = None,
    ) -> CompactedNatively:
        """Compacts `history` (counted as `counted`, when the caller did) and seals the
        result; NothingToCompactError when it cannot. Always forced: the caller's own
        trigger (or its explicit request) already decided that it compacts."""
        options = CompactOptions(force=True, instructions=instructions, trigger="native")
        outcome = await self.compaction.compact(history, options, caller_gone, counted=counted)
        if (
            not outcome.compacted
            or outcome.messages is None
            or outcome.summary is None
            or outcome.counted_after is None
        ):
            raise NothingToCompactError(outcome.reason or "nothing to compact")
        if self.ledger is not None and outcome.summarizer is not None:
            await self.ledger.summary_call(tenant, outcome.summarizer.info, outcome.summary.usage)
        inline = outcome.counted.inline_system_count
        messages = outcome.messages
        state = CompactionState(
            head=tuple(messages[:inline]),
            summary=outcome.summary.summary,
            kept=tuple(messages[inline + 1 :]),
        )
        usage = outcome.summary.usage
        sealed = CompactionReport(
            summary=state.summary,
            state=self.states.seal(state, tenant),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
        )
        return CompactedNatively(sealed, list(messages), outcome.counted_after)


def keep_recent_for(trigger: int | None) -> int | None:
    """The verbatim tail a native compaction keeps: the rule transparent and session mode
    use for their threshold (the service's default, at most a quarter of it), applied to
    the caller's trigger. A third kept the context nearer the trigger after compacting,
    and every later turn re-read the larger tail from the cache (bench/cost.py: 0.57× →
    0.55× and 0.50× → 0.45× of sending directly). None (no trigger): the service's own
    setting."""
    if trigger is None:
        return None
    return keep_recent_for_threshold(trigger, DEFAULT_KEEP_RECENT_TOKENS)


def uncompacted_state(messages: Sequence[Any], inline: int) -> CompactionState:
    """A state that keeps every message (a standalone compaction with nothing to fold)."""
    return CompactionState(tuple(messages[:inline]), None, tuple(messages[inline:]))
