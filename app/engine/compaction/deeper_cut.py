"""A deeper cut (SPEC §15, no thrash): when a summary and the tail kept after the cut
would still be over the threshold, the next turn compacts again and the summarizer is
paid for nothing. A session's compaction then cuts deeper once — summarizes more, keeps
less — and, if even that is over, says so instead of trying again on the same base.

The deeper cut keeps half the room the threshold leaves after everything that is not
conversation (system prompt, tools, inline system messages) and the summary: the other
half is for the turns that follow, so the next compaction is some turns away.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.orchestration import CompactionPlan, plan_compaction
from app.engine.errors import NothingToCompactError
from app.engine.messages import Message


def tokens_after_cut(
    tokens: int, per_message: Sequence[int], inline: int, cut: int, summary_tokens: int
) -> int:
    """The history's tokens once messages [inline, cut) (a previous summary included)
    are replaced by a summary of `summary_tokens`."""
    return tokens - sum(per_message[inline:cut]) + summary_tokens


def deeper_plan(
    messages: Sequence[Message],
    per_message: Sequence[int],
    plan: CompactionPlan,
    tokens: int,
    threshold: int,
    summary_tokens: int,
    inline: int,
    marker: SummaryMarker,
) -> CompactionPlan | None:
    """A plan that keeps less than `plan` so that a summary of `summary_tokens` leaves
    the history of `tokens` under `threshold`; None when `plan` already does, or no valid
    cut lies later than its own."""
    if tokens_after_cut(tokens, per_message, inline, plan.cut_index, summary_tokens) <= threshold:
        return None
    outside = tokens - sum(per_message[inline:])
    room = threshold - outside - summary_tokens
    keep = max(1, room // 2)
    try:
        deeper = plan_compaction(messages, per_message, keep, inline, marker)
    except NothingToCompactError:
        return None
    return deeper if deeper.cut_index > plan.cut_index else None
