"""auto: clear tool results first, summarize only if still over the threshold."""

from __future__ import annotations

from dataclasses import replace

from app.engine.compaction.strategy import CompactionStep, StrategyName
from app.engine.errors import IneffectiveCompactionError
from app.services.compaction_outcome import CompactionOutcome
from app.services.strategies.protocol import CompactionJob, CompactionSteps


class ClearThenSummarize:
    name = StrategyName.AUTO
    description = "clear first, summarize only if still over the threshold"
    clears_tool_results = True

    async def compact(self, steps: CompactionSteps, job: CompactionJob) -> CompactionOutcome:
        if not job.clearing_wanted:
            return await steps.summarize_if_due(job)
        cleared = await steps.clear(job)
        if cleared.history is None or cleared.counted is None:
            return await steps.summarize_if_due(job)
        outcome = steps.cleared(job, cleared)
        if not cleared.counted.should_compact:
            return outcome
        try:
            summarized = await steps.summarize(
                replace(job, history=cleared.history, counted=cleared.counted), job.counted
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
