"""The port every compaction strategy implements, and the steps it composes.

A strategy decides what to do with a counted history (summarize it, clear old tool
results, or both) from the steps `CompactionService` offers; adding one is one module
here, one `StrategyName` member and one line in `registry.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from app.engine.compaction.strategy import StrategyName
from app.engine.ports import CallerGone
from app.services.clearing import ClearedHistory, clearing_trigger
from app.services.compaction_outcome import CompactionOutcome
from app.services.estimation import CountedHistory
from app.services.history import CompactOptions, HistoryInput


@dataclass(frozen=True, slots=True)
class CompactionJob:
    """One history to compact: as sent, counted (and parsed), with its options."""

    history: HistoryInput
    counted: CountedHistory
    options: CompactOptions
    caller_gone: CallerGone

    @property
    def clearing_trigger(self) -> int:
        """Tokens above which tool results are cleared."""
        return clearing_trigger(self.counted, self.options.clear)

    @property
    def clearing_wanted(self) -> bool:
        """Forced, or over the clearing trigger."""
        return self.options.force or self.counted.estimate.tokens > self.clearing_trigger


class CompactionSteps(Protocol):
    """What a strategy composes (CompactionService implements it)."""

    async def summarize_if_due(self, job: CompactionJob) -> CompactionOutcome:
        """Summarizes when over the threshold (or forced); else not compacted."""
        ...

    async def summarize(self, job: CompactionJob, original: CountedHistory) -> CompactionOutcome:
        """Summarizes the job's history; `original` is the count of what was sent."""
        ...

    async def clear(self, job: CompactionJob) -> ClearedHistory:
        """Plans (and when it clears anything, applies and counts) tool-result clearing."""
        ...

    def cleared(self, job: CompactionJob, cleared: ClearedHistory) -> CompactionOutcome:
        """The outcome of a clearing that cleared something (refused if it grew)."""
        ...

    def not_compacted(self, job: CompactionJob, reason: str | None) -> CompactionOutcome:
        """The outcome that leaves the history as it is, and why."""
        ...


class CompactionStrategy(Protocol):
    """One way of compacting a history (the `strategy` setting)."""

    @property
    def name(self) -> StrategyName: ...

    @property
    def description(self) -> str:
        """One phrase for the API documentation."""
        ...

    @property
    def clears_tool_results(self) -> bool:
        """True when it clears tool results (due above the clearing trigger)."""
        ...

    async def compact(self, steps: CompactionSteps, job: CompactionJob) -> CompactionOutcome:
        """Compacts the job's history or says why it did not."""
        ...
