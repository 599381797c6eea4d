"""The token curve of a session: its context size after each transcript entry.

Before the first compaction the context is every entry so far; after a compaction it is
the leading system entries, the summary and the kept tail (with that record's cleared tool
uses replaced by their placeholders), plus whatever was appended since.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate


@dataclass(frozen=True, slots=True)
class CompactionCost:
    """What one compaction record puts into the context, in tokens."""

    ordinal: int
    # The transcript length the compaction saw: it ran right after entry covered_seq - 1.
    covered_seq: int
    first_kept_seq: int
    summary_tokens: int
    # Tokens the placeholders of its cleared tool uses save (or cost) on the kept tail.
    cleared_delta: int
    recorded_before: int
    recorded_after: int


@dataclass(frozen=True, slots=True)
class TurnPoint:
    """The context size right after entry `seq` was appended (before any compaction then)."""

    seq: int
    tokens: int
    # The ordinal of the compaction the context was built on; 0 before the first one.
    built_on: int


@dataclass(frozen=True, slots=True)
class CompactionDrop:
    """A compaction on the curve: it ran after entry `seq`, from `before` to `after`."""

    ordinal: int
    seq: int
    before: int
    after: int
    # The numbers the record itself stored when it ran (they may include provider usage).
    recorded_before: int
    recorded_after: int


@dataclass(frozen=True, slots=True)
class TokenCurve:
    points: tuple[TurnPoint, ...]
    drops: tuple[CompactionDrop, ...]
    threshold: int
    context_window: int

    @property
    def peak(self) -> int:
        values = [p.tokens for p in self.points] + [d.before for d in self.drops]
        return max(values, default=0)


def token_curve(
    per_entry: Sequence[int],
    *,
    fixed_tokens: int,
    reply_priming: int,
    system_prefix_count: int,
    compactions: Sequence[CompactionCost],
    threshold: int,
    context_window: int,
) -> TokenCurve:
    """The context size after each entry, and each compaction's drop on it.

    `fixed_tokens` is the top-level system prompt plus the tool definitions; the counting
    mirrors the estimate (system + tools + messages + reply priming, no usage anchor).
    """
    totals = [0, *accumulate(per_entry)]  # totals[k] = tokens of entries 0..k-1
    ordered = sorted(compactions, key=lambda c: c.ordinal)

    def context_after(seq: int, record: CompactionCost | None) -> int:
        prefix = totals[min(system_prefix_count, seq + 1)]
        if record is None:
            body = totals[seq + 1] - prefix
        else:
            start = max(record.first_kept_seq, system_prefix_count)
            body = (
                record.summary_tokens
                + totals[seq + 1]
                - totals[min(start, seq + 1)]
                + record.cleared_delta
            )
        return fixed_tokens + reply_priming + prefix + body

    points: list[TurnPoint] = []
    drops: list[CompactionDrop] = []
    active: CompactionCost | None = None
    pending = list(ordered)
    for seq in range(len(per_entry)):
        points.append(
            TurnPoint(seq=seq, tokens=context_after(seq, active), built_on=_ordinal(active))
        )
        # Compactions that ran right after this entry, in order.
        while pending and pending[0].covered_seq - 1 <= seq:
            record = pending.pop(0)
            drops.append(
                CompactionDrop(
                    ordinal=record.ordinal,
                    seq=seq,
                    before=context_after(seq, active),
                    after=context_after(seq, record),
                    recorded_before=record.recorded_before,
                    recorded_after=record.recorded_after,
                )
            )
            active = record
    return TokenCurve(
        points=tuple(points),
        drops=tuple(drops),
        threshold=threshold,
        context_window=context_window,
    )


def _ordinal(record: CompactionCost | None) -> int:
    return record.ordinal if record is not None else 0
