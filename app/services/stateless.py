"""The stateless use cases (`POST /estimate`, `POST /compact`): a history counted or
compacted as sent, a compaction item this service wrote standing for what it folded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from app.engine.ports import CallerGone
from app.services.compaction import CompactionOutcome, CompactionService
from app.services.cost_ledger import CostLedger
from app.services.estimation import CountedHistory, EstimationService
from app.services.history import CompactOptions, HistoryInput


class HistoryExpander(Protocol):
    """Rebuilds what a compaction item of this service stands for (Responses)."""

    def expand_history(self, history: HistoryInput, tenant: str) -> HistoryInput: ...


@dataclass(frozen=True, slots=True)
class StatelessHistory:
    """Estimate and compact a history the caller sends whole."""

    estimation: EstimationService
    compaction: CompactionService
    expander: HistoryExpander
    # Bills the summary calls of `/compact` to the tenant (SPEC §15).
    ledger: CostLedger | None = field(default=None)

    def estimate(self, history: HistoryInput, tenant: str) -> CountedHistory:
        """The history's count and decision (a compaction item counts as its history)."""
        return self.estimation.count(self.expander.expand_history(history, tenant))

    async def compact(
        self,
        history: HistoryInput,
        options: CompactOptions,
        tenant: str,
        caller_gone: CallerGone,
    ) -> CompactionOutcome:
        """The history compacted (a compaction item's summary is the previous summary)."""
        expanded = self.expander.expand_history(history, tenant)
        outcome = await self.compaction.compact(expanded, options, caller_gone)
        summary, summarizer = outcome.summary, outcome.summarizer
        if self.ledger is not None and summary is not None and summarizer is not None:
            await self.ledger.summary_call(tenant, summarizer.info, summary.usage)
        return outcome
