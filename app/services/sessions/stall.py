"""The loop breaker of `prepare`: when automatic compaction cannot bring a session's context
under the threshold, say so once and wait for new entries before trying again.

Without it every turn would pay for a summary that changes nothing: the messages kept
verbatim alone are over the threshold, and only new history can move the cut past them.
"""

from __future__ import annotations

from app.services.estimation import CountedHistory
from app.services.sessions.context import SessionContext
from app.services.sessions.views import CompactionStall


def stall_of(
    context: SessionContext, counted: CountedHistory, entry_count: int, base: str | None = None
) -> CompactionStall:
    """The stall a context over the threshold represents, seen at `entry_count` entries,
    after a summary of `base` (None: none was made)."""
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
        base=base,
    )


def waits_for_new_entries(stall: CompactionStall | None, entry_count: int) -> bool:
    """True while no entry arrived since `stall` was recorded."""
    return stall is not None and stall.entry_count >= entry_count


def base_of(context: SessionContext, cut_index: int) -> str:
    """What a summary of `context` cut at `cut_index` is made from: the latest record
    (its summary is the previous summary) and the first entry kept."""
    latest = context.latest.id if context.latest is not None else ""
    return f"{latest}:{context.seqs[cut_index]}"
