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


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """One summary call. LLM summarizers send `system_prompt` + `prompt`; the extractive
    summarizer reads `messages` and `previous_summary` directly."""

    system_prompt: str
    prompt: str
    messages: tuple[Message, ...]
    previous_summary: str | None
    instructions: str | None
    max_output_tokens: int
    thinking: ThinkingLevel


@dataclass(frozen=True, slots=True)
class SummaryUsage:
    input_tokens: int = 0
    output_tokens: int = 0


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
