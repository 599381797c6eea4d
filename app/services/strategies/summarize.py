"""summarize: fold older messages into one summary message (the default)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.engine.compaction.strategy import StrategyName
from app.engine.ports import CallerGone
from app.services.estimation import CountedHistory
from app.services.history import CompactOptions, HistoryInput
from app.services.strategies.protocol import CompactionSteps

if TYPE_CHECKING:
    from app.services.compaction import CompactionOutcome


class Summarize:
    name = StrategyName.SUMMARIZE
    description = "fold older messages into one summary message"
    clears_tool_results = False

    async def compact(
        self,
        steps: CompactionSteps,
        history: HistoryInput,
        counted: CountedHistory,
        options: CompactOptions,
        caller_gone: CallerGone,
    ) -> CompactionOutcome:
        return await steps.summarize_if_due(history, counted, options, caller_gone)
