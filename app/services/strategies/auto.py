"""auto: clear tool results first, summarize only if still over the threshold."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from app.engine.compaction.strategy import CompactionStep, StrategyName
from app.engine.errors import IneffectiveCompactionError
from app.engine.ports import CallerGone
from app.services.clearing import clearing_trigger
from app.services.estimation import CountedHistory
from app.services.history import CompactOptions, HistoryInput
from app.services.strategies.protocol import CompactionSteps

if TYPE_CHECKING:
    from app.services.compaction import CompactionOutcome


class ClearThenSummarize:
    name = StrategyName.AUTO
    description = "clear first, summarize only if still over the threshold"
    clears_tool_results = True

    async def compact(
        self,
        steps: CompactionSteps,
        history: HistoryInput,
        counted: CountedHistory,
        options: CompactOptions,
        caller_gone: CallerGone,
    ) -> CompactionOutcome:
        if not options.force and counted.estimate.tokens <= clearing_trigger(
            counted, options.clear
        ):
            return await steps.summarize_if_due(history, counted, options, caller_gone)
        cleared = await steps.clear(history, counted, options)
        if cleared.history is None or cleared.counted is None:
            return await steps.summarize_if_due(history, counted, options, caller_gone)
        outcome = steps.cleared(counted, cleared, options)
        if not cleared.counted.should_compact:
            return outcome
        try:
            summarized = await steps.summarize(
                cleared.history, cleared.counted, counted, options, caller_gone
            )
        except IneffectiveCompactionError:
            summarized = outcome
        if not summarized.compacted or summarized.plan is None:
            # Clearing alone shrank the history, and a summary could not add to it.
            return outcome
        return replace(
            summarized,
            applied=(CompactionStep.CLEAR_TOOL_RESULTS, CompactionStep.SUMMARIZE),
            cleared=outcome.cleared,
        )
