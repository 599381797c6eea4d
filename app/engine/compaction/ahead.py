"""Where a compaction prepared ahead of the threshold cuts (SPEC §16).

A summary prepared at the soft threshold is used by the turn that crosses the threshold,
and by then the history has grown: the distance left to the threshold, plus however far
the crossing turn goes past it. Everything that arrived in between is kept verbatim (it
is newer than the cut), so a prepared compaction that kept `keep_recent_tokens` would
leave that much more after it than the inline one would, and the next threshold would
come that much sooner — one more summary per session on real transcripts. The prepared
cut keeps less now, by the growth it expects.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.messages import Message, Role

# The newest turns whose sizes say how far a crossing turn goes past the threshold.
RECENT_TURNS = 8


def turn_sizes(messages: Sequence[Message], counts: Sequence[int]) -> list[int]:
    """Tokens each of the newest turns added, oldest first: a turn is an assistant
    reply (one or several consecutive assistant messages) and what came back after it
    (tool results, the user's next message) — what one request of an agent adds to the
    one before it. Messages before the first assistant reply are no turn."""
    sizes: list[int] = []
    previous: Role | None = None
    for message, count in zip(messages, counts, strict=True):
        if message.role is Role.ASSISTANT and previous is not Role.ASSISTANT:
            sizes.append(0)
        if sizes:
            sizes[-1] += count
        previous = message.role
    return sizes[-RECENT_TURNS:]


def expected_overshoot(sizes: Sequence[int]) -> int:
    """How far past the threshold the turn that crosses it goes, on average: a turn of
    `g` tokens lands anywhere in its `g`, and a large turn is as much more likely to be
    the one that crosses as it is large — E[g²] / 2E[g] over the recent turns."""
    total = sum(sizes)
    if total <= 0:
        return 0
    return sum(size * size for size in sizes) // (2 * total)


def kept_ahead(keep: int, tokens: int, threshold: int, overshoot: int) -> int:
    """The verbatim tail of a compaction prepared at `tokens`, to be used once the
    history is `threshold - tokens + overshoot` longer: that much less than `keep` (at
    least one token: the cut point still keeps the newest turn whole)."""
    growth = max(0, threshold - tokens) + overshoot
    return max(1, min(keep, keep - growth))


def crossing_within_lead(
    distance: int, growth_per_turn: float, seconds_per_turn: float, summary_seconds: float
) -> bool:
    """True when the summary the threshold will need should start now: the threshold,
    `distance` tokens away, is expected within the time a summary takes plus one turn
    (a later start can only come on the next turn). A history that grows
    `growth_per_turn` tokens every `seconds_per_turn` seconds covers `growth_per_turn *
    (summary_seconds / seconds_per_turn + 1)` tokens in that time.

    Started sooner, the summary is ready long before the crossing, and what arrived in
    between is kept verbatim after the cut: the compaction leaves more behind than the
    inline one would, and the next threshold comes sooner (one more summary per long
    session on the real transcripts at a fixed soft threshold of 0.8)."""
    if distance <= 0 or growth_per_turn <= 0 or seconds_per_turn <= 0:
        return True
    lead = growth_per_turn * (summary_seconds / seconds_per_turn + 1)
    return distance <= lead
