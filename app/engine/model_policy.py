"""Per-model policy (SPEC §18): what an operator sets for the model names a pattern matches.

Patterns are shell-style globs (`claude-*`, `gpt-4o*`, `my-gateway-alias`), matched without
regard to case against the name a request gives and the registry entry it resolved to.
Every matching pattern applies; a more specific one (more literal characters; a name with
no wildcard above all) overrides a less specific one key by key, so `*` can hold the
defaults and `claude-sonnet-4-6*` only what differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from fnmatch import fnmatchcase
from typing import Any

_WILDCARDS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class ModelPrices:
    """Prices in US dollars per million tokens (None: not configured)."""

    input: float | None = None
    cache_write: float | None = None
    cache_read: float | None = None
    output: float | None = None
    # Anthropic's 1-hour cache writes (2x input); None: priced as `cache_write`.
    cache_write_1h: float | None = None

    def over(self, base: ModelPrices | None) -> ModelPrices:
        """These prices, with `base`'s filling the ones not set here."""
        return _over(self, base) if base is not None else self


@dataclass(frozen=True, slots=True)
class ModelPolicy:
    """Settings for a model; None: the service default (or the registry's window)."""

    context_window: int | None = None
    reserve_tokens: int | None = None
    # The share of the window the threshold sits at (SPEC §4's 0.85).
    trigger_ratio: float | None = None
    keep_recent_tokens: int | None = None
    # summarize | clear_tool_results | auto: the strategy when a request names none.
    strategy: str | None = None
    # The soft threshold (SPEC §16) as a share of the threshold.
    prepare_ahead_ratio: float | None = None
    prices: ModelPrices | None = None

    def over(self, base: ModelPolicy) -> ModelPolicy:
        """This policy, with `base`'s values filling the keys not set here."""
        merged: ModelPolicy = _over(self, base)
        if self.prices is not None and base.prices is not None:
            merged = replace(merged, prices=self.prices.over(base.prices))
        return merged


NO_POLICY = ModelPolicy()


def _over(top: Any, base: Any) -> Any:
    values = {f.name: getattr(top, f.name) for f in fields(top)}
    for name, value in values.items():
        if value is None:
            values[name] = getattr(base, name)
    return type(top)(**values)


def _specificity(pattern: str) -> tuple[bool, int]:
    """Exact names first, then by how many literal characters a pattern has."""
    literal = sum(1 for c in pattern if c not in _WILDCARDS)
    return (not any(c in _WILDCARDS for c in pattern), literal)


class PolicyTable:
    """The configured patterns and their policies; `policy_for` merges the matches."""

    def __init__(self, patterns: Mapping[str, ModelPolicy] | None = None) -> None:
        items = enumerate((patterns or {}).items())
        ranked = sorted(items, key=lambda item: (_specificity(item[1][0]), item[0]))
        # Least specific first: each later match overrides what the earlier ones set.
        self._rules = [(pattern.lower(), policy) for _, (pattern, policy) in ranked]

    def policy_for(self, *names: str | None) -> ModelPolicy:
        """The merged policy of every pattern matching one of `names`."""
        lowered = [n.lower() for n in names if n is not None]
        merged = NO_POLICY
        for pattern, policy in self._rules:
            if any(fnmatchcase(name, pattern) for name in lowered):
                merged = policy.over(merged)
        return merged

    def __bool__(self) -> bool:
        return bool(self._rules)
