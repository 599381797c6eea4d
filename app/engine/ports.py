"""Protocols the engine needs from the outside world: tokenizers and summarizers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from app.engine.messages import Message
from app.engine.thinking import ThinkingLevel


class Tokenizer(Protocol):
    """Counts tokens of plain text."""

    @property
    def name(self) -> str:
        """`o200k_base`, `cl100k_base` or `chars/4`."""
        ...

    def count(self, text: str) -> int:
        """Number of tokens in `text`."""
        ...

    def count_many(self, texts: list[str]) -> list[int]:
        """Token counts of several texts, in order (may use threads)."""
        ...


@dataclass(frozen=True, slots=True)
class SummarizerInfo:
    """What the engine must know about a summarizer to budget and retry."""

    provider: str
    model: str
    # Tokens the summarizer can read in one call; None means unbounded (extractive).
    context_window: int | None = None
    max_output_tokens: int | None = None
    thinking_levels: tuple[ThinkingLevel, ...] = ()
    # Made in this process in milliseconds (extractive): a turn loses nothing waiting for it.
    local: bool = False


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """One summary call. LLM summarizers send `system_prompt`, then `prompt_parts` in
    order; the extractive summarizer reads `messages` and `previous_summary` directly.

    Built for the provider's prompt cache (SPEC §15): `system_prompt` is the same bytes on
    every call; the first `stable_parts` of `prompt_parts` (the previous summary) may be
    resent unchanged by a later call, the rest (the new conversation) is new each time.
    `cache_key` groups calls that share that prefix (OpenAI's `prompt_cache_key`).
    """

    system_prompt: str
    prompt_parts: tuple[str, ...]
    messages: tuple[Message, ...]
    previous_summary: str | None
    instructions: str | None
    max_output_tokens: int
    thinking: ThinkingLevel
    stable_parts: int = 0
    cache_key: str | None = None

    @property
    def prompt(self) -> str:
        """The whole user turn as one text."""
        return "\n\n".join(self.prompt_parts)


@dataclass(frozen=True, slots=True)
class SummaryUsage:
    """What a summary call cost, as the provider reported it. `input_tokens` counts every
    prompt token, cached or not; the cache fields say how many of them were read from or
    written to the provider's prompt cache."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # Of the cache writes, those with Anthropic's 1-hour TTL (priced 2x, not 1.25x).
    cache_write_1h_tokens: int = 0

    def plus(self, other: SummaryUsage) -> SummaryUsage:
        """Both calls' usage together."""
        return SummaryUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )


@dataclass(frozen=True, slots=True)
class SummaryResult:
    """What came back; `truncated` is the provider's own word that it hit the limit."""

    text: str
    truncated: bool = False
    usage: SummaryUsage = field(default_factory=SummaryUsage)
    # The level the provider really used, when it differs from the one asked for (e.g. a
    # budget too small for thinking); None means as requested.
    thinking: ThinkingLevel | None = None


class Summarizer(Protocol):
    """Writes or updates a structured summary. Transport retries live inside; the
    truncation rule (SPEC §5.6) lives in the engine, above this call."""

    @property
    def info(self) -> SummarizerInfo: ...

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Make one summary attempt; raise a `SummarizerError` subclass on failure."""
        ...


# Returns True once the caller has gone away; checked before retrying.
CallerGone = Callable[[], bool]

# Told how far a summary is: (chunks folded, chunks in all), first with 0 folded once the
# history is split, then after each chunk. An asynchronous compaction job reports it.
ChunkProgress = Callable[[int, int], None]
