"""The port every compaction strategy implements, and the steps it composes.

A strategy decides what to do with a counted history (summarize it, clear old tool
results, or both) from the steps `CompactionService` offers; adding one is one module
here, one `StrategyName` member and one line in `registry.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from app.engine.compaction.strategy import StrategyName
from app.engine.ports import CallerGone
from app.services.clearing import ClearedHistory
from app.services.estimation import CountedHistory
from app.services.history import CompactOptions, HistoryInput

if TYPE_CHECKING:
    from app.services.compaction import CompactionOutcome


class CompactionSteps(Protocol):
    """What a strategy composes (CompactionService implements it)."""

    async def summarize_if_due(
        self,
        history: HistoryInput,
        counted: CountedHistory,
        options: CompactOptions,
        caller_gone: CallerGone,
    ) -> CompactionOutcome:
        """Summarizes when over the threshold (or forced); else not compacted."""
        ...

    async def summarize(
        self,
        history: HistoryInput,
        counted: CountedHistory,
        original: CountedHistory,
        options: CompactOptions,
        caller_gone: CallerGone,
    ) -> CompactionOutcome:
        """Summarizes `history` (counted as `counted`); `original` is what was sent."""
        ...

    async def clear(
        self, history: HistoryInput, counted: CountedHistory, options: CompactOptions
    ) -> ClearedHistory:
        """Plans (and when it clears anything, applies and counts) tool-result clearing."""
        ...

    def cleared(
        self, counted: CountedHistory, cleared: ClearedHistory, options: CompactOptions
    ) -> CompactionOutcome:
        """The outcome of a clearing that cleared something (refused if it grew)."""
        ...

    def not_compacted(
        self, counted: CountedHistory, options: CompactOptions, reason: str | None
    ) -> CompactionOutcome:
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

    async def compact(
        self,
        steps: CompactionSteps,
        history: HistoryInput,
        counted: CountedHistory,
        options: CompactOptions,
        caller_gone: CallerGone,
    ) -> CompactionOutcome:
        """Compacts `history` (counted as `counted`) or says why it did not."""
        ...
