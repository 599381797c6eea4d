"""Per-model prices and caching parameters, as the vendors publish them.

Anthropic (platform.claude.com prompt-caching and pricing pages): a 5-minute cache write
costs 1.25x the base input price, a 1-hour write 2x, a cache read 0.1x. The minimum
cacheable prompt length is per model: 4096 tokens for Claude Opus 4.5/4.6/4.7 and Haiku
4.5; 1024 for Sonnet 4.6/4.5/4/3.7 and Opus 4.1/4; 2048 for Haiku 3.5 and Haiku 3 (the
docs' list as quoted in anthropics/anthropic-sdk-python#1194).

OpenAI (developers.openai.com prompt-caching guide and pricing page): prompts of 1024
tokens or more are cached automatically, hits come in 128-token increments, writes cost
nothing before the GPT-5.6 family; a cached input token costs 0.5x on gpt-4o and
gpt-4o-mini, 0.25x on gpt-4.1 and the o-series, 0.1x on the gpt-5 family.

Prices are US dollars per million tokens. A model is found by the longest table key its
name starts with (`claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`, `gpt-4o-2024-08-06`
→ `gpt-4o`, `gpt-4o-mini` → `gpt-4o-mini`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """What one model charges, and from which length it caches."""

    input: float
    output: float
    cache_read: float  # multiplier of `input`
    cache_write_5m: float = 0.0  # multiplier of `input` (Anthropic 5-minute writes)
    cache_write_1h: float = 0.0  # multiplier of `input` (Anthropic 1-hour writes)
    min_cacheable: int = 1024

    def dollars(self, uncached: int, read: int, write_5m: int, write_1h: int, output: int) -> float:
        """The price of one request's tokens."""
        per_token = self.input / 1e6
        return (
            uncached * per_token
            + read * per_token * self.cache_read
            + write_5m * per_token * self.cache_write_5m
            + write_1h * per_token * self.cache_write_1h
            + output * self.output / 1e6
        )


def _anthropic(input_price: float, output_price: float, min_cacheable: int) -> ModelPrice:
    return ModelPrice(input_price, output_price, 0.1, 1.25, 2.0, min_cacheable)


ANTHROPIC: dict[str, ModelPrice] = {
    "claude-opus-4-7": _anthropic(5.0, 25.0, 4096),
    "claude-opus-4-6": _anthropic(5.0, 25.0, 4096),
    "claude-opus-4-5": _anthropic(5.0, 25.0, 4096),
    "claude-opus-4-1": _anthropic(15.0, 75.0, 1024),
    "claude-opus-4": _anthropic(15.0, 75.0, 1024),
    "claude-sonnet-4-6": _anthropic(3.0, 15.0, 1024),
    "claude-sonnet-4-5": _anthropic(3.0, 15.0, 1024),
    "claude-sonnet-4": _anthropic(3.0, 15.0, 1024),
    "claude-3-7-sonnet": _anthropic(3.0, 15.0, 1024),
    "claude-haiku-4-5": _anthropic(1.0, 5.0, 4096),
    "claude-3-5-haiku": _anthropic(0.8, 4.0, 2048),
    "claude-3-haiku": _anthropic(0.25, 1.25, 2048),
}

OPENAI: dict[str, ModelPrice] = {
    "gpt-4o": ModelPrice(2.50, 10.00, 0.5),
    "gpt-4o-mini": ModelPrice(0.15, 0.60, 0.5),
    "gpt-4.1": ModelPrice(2.00, 8.00, 0.25),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60, 0.25),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40, 0.25),
    "o3": ModelPrice(2.00, 8.00, 0.25),
    "o4-mini": ModelPrice(1.10, 4.40, 0.25),
    "gpt-5": ModelPrice(1.25, 10.00, 0.1),
    "gpt-5-mini": ModelPrice(0.25, 2.00, 0.1),
    "gpt-5-nano": ModelPrice(0.05, 0.40, 0.1),
}

# OpenAI caches in steps of this many tokens past the minimum.
OPENAI_CACHE_STEP = 128


def price_of(table: dict[str, ModelPrice], model: str) -> ModelPrice | None:
    """The entry whose key is the longest prefix of `model`; None when none is."""
    best: str | None = None
    for key in table:
        if model.startswith(key) and (best is None or len(key) > len(best)):
            best = key
    return table[best] if best is not None else None
