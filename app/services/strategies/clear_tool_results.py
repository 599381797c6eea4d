"""clear_tool_results: replace old tool results with short placeholders, no model call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.engine.compaction.strategy import StrategyName
from app.engine.ports import CallerGone
from app.services.clearing import clearing_trigger
from app.services.estimation import CountedHistory
from app.services.history import CompactOptions, HistoryInput
from app.services.strategies.protocol import CompactionSteps

if TYPE_CHECKING:
    from app.services.compaction import CompactionOutcome


class ClearToolResults:
    name = StrategyName.CLEAR_TOOL_RESULTS
    description = "replace old tool results with short placeholders, no model call"
    clears_tool_results = True

    async def compact(
        self,
        steps: CompactionSteps,
        history: HistoryInput,
        counted: CountedHistory,
        options: CompactOptions,
        caller_gone: CallerGone,
    ) -> CompactionOutcome:
        trigger = clearing_trigger(counted, options.clear)
        if not options.force and counted.estimate.tokens <= trigger:
            reason = (
                f"under the clearing trigger: {counted.estimate.tokens} tokens is not above "
                f"{trigger}; pass force=true to clear anyway"
            )
            return steps.not_compacted(counted, options, reason)
        cleared = await steps.clear(history, counted, options)
        if cleared.history is None or cleared.counted is None:
            return steps.not_compacted(counted, options, cleared.plan.reason)
        return steps.cleared(counted, cleared, options)
