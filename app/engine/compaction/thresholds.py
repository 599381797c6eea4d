"""When to compact (SPEC §4): the threshold and the strict `>` decision."""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_RESERVE_TOKENS = 32_768
DEFAULT_KEEP_RECENT_TOKENS = 20_000
DEFAULT_TRIGGER_RATIO = 0.85


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """The knobs of one decision; `context_window=None` means the window is unknown."""

    context_window: int | None
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    trigger_tokens: int | None = None
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
    fallback_window: int = 128_000
    # The share of a known window the threshold may reach (a per-model policy sets it).
    trigger_ratio: float = DEFAULT_TRIGGER_RATIO

    @property
    def effective_window(self) -> int:
        return self.context_window if self.context_window is not None else self.fallback_window


def compaction_threshold(settings: CompactionSettings) -> int:
    """The token count above which the history must be compacted."""
    if settings.trigger_tokens is not None:
        return settings.trigger_tokens
    reserve = settings.reserve_tokens
    window = settings.context_window
    ratio = settings.trigger_ratio
    if window is None:
        fallback = settings.fallback_window
        # The chapter's rule is fallback - reserve; a reserve at least as large as the
        # fallback window would make that zero or negative, so the small-window rule applies.
        return fallback - reserve if fallback > reserve else max(1, math.floor(ratio * fallback))
    if window > reserve:
        return min(math.floor(ratio * window), window - reserve)
    return max(1, math.floor(ratio * window))


def should_compact(tokens: int, settings: CompactionSettings) -> bool:
    """Strictly greater than the threshold: a history exactly at it is left alone."""
    return tokens > compaction_threshold(settings)


def summary_output_budget(reserve_tokens: int, model_max_output: int | None) -> int:
    """Output tokens the summary call may use: min(⌊0.8·reserve⌋, the model's limit)."""
    budget = math.floor(0.8 * reserve_tokens)
    if model_max_output is not None:
        budget = min(budget, model_max_output)
    return max(1, budget)
