"""The compaction strategies by name: the one list the settings, the records and the
HTTP contract take their names (and the API its descriptions) from."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from app.engine.clearing import ClearSettings
from app.engine.compaction.strategy import DEFAULT_STRATEGY, StrategyName
from app.services.clearing import clearing_trigger
from app.services.estimation import CountedHistory
from app.services.strategies.auto import ClearThenSummarize
from app.services.strategies.clear_tool_results import ClearToolResults
from app.services.strategies.protocol import CompactionStrategy
from app.services.strategies.summarize import Summarize


class StrategyRegistry:
    """Every `StrategyName` with its implementation, in the order callers see them."""

    def __init__(self, strategies: Iterable[CompactionStrategy], default: StrategyName) -> None:
        self._strategies = {s.name: s for s in strategies}
        missing = [name.value for name in StrategyName if name not in self._strategies]
        if missing:
            raise ValueError(f"strategies without an implementation: {', '.join(missing)}")
        self.default = self._strategies[default]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name.value for name in self._strategies)

    def __iter__(self) -> Iterator[CompactionStrategy]:
        return iter(self._strategies.values())

    def get(self, name: StrategyName) -> CompactionStrategy:
        return self._strategies[name]

    @property
    def description(self) -> str:
        """`name: what it does.` for each, the default marked (the API's field docs)."""
        return " ".join(
            f"{s.name.value}: {s.description}{' (default)' if s is self.default else ''}."
            for s in self
        )


STRATEGIES = StrategyRegistry(
    [Summarize(), ClearToolResults(), ClearThenSummarize()], default=DEFAULT_STRATEGY
)


def clearing_due(counted: CountedHistory, strategy: StrategyName, settings: ClearSettings) -> bool:
    """True when a strategy clears tool results and the history is over the clearing
    trigger (which may lie below the compaction threshold)."""
    if not STRATEGIES.get(strategy).clears_tool_results:
        return False
    return counted.estimate.tokens > clearing_trigger(counted, settings)


def strategy_for(asked: StrategyName | None, counted: CountedHistory) -> StrategyName:
    """The strategy asked for, else the model's configured one (COMPACTOR_CONFIG), else
    the default."""
    if asked is not None:
        return asked
    configured = counted.choice.model.policy.strategy
    return StrategyName(configured) if configured else DEFAULT_STRATEGY
