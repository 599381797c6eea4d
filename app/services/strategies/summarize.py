"""summarize: fold older messages into one summary message (the default)."""

from __future__ import annotations

from app.engine.compaction.strategy import StrategyName
from app.services.compaction_outcome import CompactionOutcome
from app.services.strategies.protocol import CompactionJob, CompactionSteps


class Summarize:
    name = StrategyName.SUMMARIZE
    description = "fold older messages into one summary message"
    clears_tool_results = False

    async def compact(self, steps: CompactionSteps, job: CompactionJob) -> CompactionOutcome:
        return await steps.summarize_if_due(job)
