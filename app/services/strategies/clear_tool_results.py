"""clear_tool_results: replace old tool results with short placeholders, no model call."""

from __future__ import annotations

from app.engine.compaction.strategy import StrategyName
from app.services.compaction_outcome import CompactionOutcome
from app.services.strategies.protocol import CompactionJob, CompactionSteps


class ClearToolResults:
    name = StrategyName.CLEAR_TOOL_RESULTS
    description = "replace old tool results with short placeholders, no model call"
    clears_tool_results = True

    async def compact(self, steps: CompactionSteps, job: CompactionJob) -> CompactionOutcome:
        if not job.clearing_wanted:
            reason = (
                f"under the clearing trigger: {job.counted.estimate.tokens} tokens is not "
                f"above {job.clearing_trigger}; pass force=true to clear anyway"
            )
            return steps.not_compacted(job, reason)
        cleared = await steps.clear(job)
        if cleared.history is None or cleared.counted is None:
            return steps.not_compacted(job, cleared.plan.reason)
        return steps.cleared(job, cleared)
