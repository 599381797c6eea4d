"""What a compaction answers, whichever strategy made it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.engine.clearing import ClearedToolUse
from app.engine.compaction.fidelity import FinishedSummary
from app.engine.compaction.orchestration import CompactionPlan, SummaryOutcome
from app.engine.compaction.strategy import DEFAULT_STRATEGY, CompactionStep, StrategyName
from app.engine.ports import Summarizer
from app.services.estimation import CountedHistory


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    """What /compact answers; `plan`/`summary` are None when nothing was compacted."""

    counted: CountedHistory
    compacted: bool
    reason: str | None = None
    plan: CompactionPlan | None = None
    summary: SummaryOutcome | None = None
    messages: list[Any] | None = None
    tokens_after: int | None = None
    summarizer: Summarizer | None = None
    # The strategy asked for, and the steps it applied: clear_tool_results, summarize.
    strategy: StrategyName = DEFAULT_STRATEGY
    applied: tuple[CompactionStep, ...] = ()
    finished: FinishedSummary | None = None
    cleared: tuple[ClearedToolUse, ...] = ()
    # The count of `messages` (no usage anchor: the reports measured the old history).
    counted_after: CountedHistory | None = None

    @property
    def tokens_before(self) -> int:
        return self.counted.estimate.tokens
