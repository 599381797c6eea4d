"""Context estimate: per-message counts plus system and tools, anchored on the latest
usable provider usage report (the chapter's estimateContextTokens)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class UsageReport:
    """A provider's usage for the reply at `message_index` (input + output + cache)."""

    message_index: int
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_input_tokens
            + self.cache_creation_input_tokens
        )


@dataclass(frozen=True, slots=True)
class ContextEstimate:
    tokens: int
    system: int
    tools: int
    messages: int
    per_message: tuple[int, ...]
    anchor: UsageReport | None


def latest_usable_report(
    usage: Sequence[UsageReport], message_count: int, estimate_floor: int
) -> UsageReport | None:
    """The newest report describing the current context; reports below the floor are
    stale (they measured a context that compaction replaced)."""
    usable = [u for u in usage if estimate_floor <= u.message_index < message_count and u.total > 0]
    return max(usable, key=lambda u: u.message_index) if usable else None


def estimate_context(
    per_message: Sequence[int],
    *,
    inline_system_count: int = 0,
    top_level_system_tokens: int = 0,
    tools_tokens: int = 0,
    reply_priming: int = 0,
    usage: Sequence[UsageReport] = (),
    estimate_floor: int = 0,
) -> ContextEstimate:
    """Total tokens the next call would send.

    `per_message` indexes the request's messages; the first `inline_system_count` of them
    are OpenAI system/developer messages and belong to the system part of the breakdown.
    """
    system = top_level_system_tokens + sum(per_message[:inline_system_count])
    messages = sum(per_message[inline_system_count:]) + (reply_priming if per_message else 0)
    anchor = latest_usable_report(usage, len(per_message), estimate_floor)
    if anchor is None:
        tokens = system + tools_tokens + messages
    else:
        tokens = anchor.total + sum(per_message[anchor.message_index + 1 :])
    return ContextEstimate(
        tokens=tokens,
        system=system,
        tools=tools_tokens,
        messages=messages,
        per_message=tuple(per_message),
        anchor=anchor,
    )
