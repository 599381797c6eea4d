"""The names of the compaction strategies and of the steps they apply.

The names are values every layer shares (settings, records, the HTTP contract); what
each strategy does is registered in `app.services.strategies`, one module per strategy.
"""

from __future__ import annotations

from enum import StrEnum


class StrategyName(StrEnum):
    """How a history is compacted (the `strategy` setting), in the order callers see."""

    SUMMARIZE = "summarize"
    CLEAR_TOOL_RESULTS = "clear_tool_results"
    AUTO = "auto"


DEFAULT_STRATEGY = StrategyName.SUMMARIZE


class CompactionStep(StrEnum):
    """What a compaction applied, in the order a strategy applies them."""

    CLEAR_TOOL_RESULTS = "clear_tool_results"
    SUMMARIZE = "summarize"
