"""The loop breaker of `prepare`: when automatic compaction cannot bring a session's context
under the threshold, say so once and wait for new entries before trying again.

Without it every turn would pay for a summary that changes nothing: the messages kept
verbatim alone are over the threshold, and only new history can move the cut past them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.services.estimation import CountedHistory
from app.services.sessions.context import SessionContext


@dataclass(frozen=True, slots=True)
class CompactionStall:
    """The numbers of an automatic compaction that left the context over the threshold."""

    entry_count: int
    tokens: int
    threshold: int
    kept_tokens: int
    keep_recent_tokens: int

    def to_json(self) -> dict[str, Any]:
        return {
            "entry_count": self.entry_count,
            "tokens": self.tokens,
            "threshold": self.threshold,
            "kept_tokens": self.kept_tokens,
            "keep_recent_tokens": self.keep_recent_tokens,
        }

    @property
    def warning(self) -> str:
        return (
            f"automatic compaction cannot bring the context under the threshold: it is "
            f"{self.tokens:,} tokens, over the threshold of {self.threshold:,}, and the "
            f"messages kept verbatim take {self.kept_tokens:,} of them "
            f"(keep_recent_tokens={self.keep_recent_tokens:,}). It is not tried again "
            f"until new messages arrive (after {self.entry_count} transcript entries); "
            "lower keep_recent_tokens, clear tool results, or compact manually"
        )


def stall_of(context: SessionContext, counted: CountedHistory, entry_count: int) -> CompactionStall:
    """The stall a context over the threshold represents, seen at `entry_count` entries."""
    kept = sum(
        tokens
        for index, (tokens, seq) in enumerate(zip(counted.per_message, context.seqs, strict=True))
        if seq is not None and index >= counted.inline_system_count
    )
    return CompactionStall(
        entry_count=entry_count,
        tokens=counted.estimate.tokens,
        threshold=counted.threshold,
        kept_tokens=kept,
        keep_recent_tokens=counted.settings.keep_recent_tokens,
    )


def waits_for_new_entries(stored: dict[str, Any] | None, entry_count: int) -> bool:
    """True while no entry arrived since the stall recorded in `stored`."""
    return stored is not None and int(stored.get("entry_count", -1)) >= entry_count
