"""When a summary prepared ahead (SPEC §16) is started: past the soft threshold, once the
threshold is expected within the time a summary takes plus one turn.

The soft threshold is the earliest point; starting there every time made the prepared
summary ready many turns before the crossing, and everything that arrived meanwhile was
kept verbatim after its cut: on the real Claude Code transcripts, 15 summarizer calls
where inline compaction made 12. Started just in time, the prepared cut is where the
inline one would be.

What "just in time" is comes from what this process saw of the conversation: how many
tokens a turn adds, how many seconds pass between turns (averaged over the recent ones),
and how long its own prepared summaries took. Until all three are known — before the
conversation's first prepared summary — a summary starts at the soft threshold, as it
always did: a conversation that crosses the soft threshold once starts there.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from app.engine.compaction.ahead import crossing_within_lead

# The clock a pace reads unless it is given one (a module name, so a test of the service
# can move time on for the paces the service builds).
_default_clock: Callable[[], float] = time.monotonic
# Weight of the newest observation in the running averages: about the last four turns.
_WEIGHT = 0.3
# Conversations whose pace is remembered, per process.
_REMEMBERED = 4096


@dataclass(slots=True)
class _Pace:
    seen_at: float
    tokens: int
    growth: float | None = None  # tokens a turn adds
    seconds: float | None = None  # seconds between turns
    summary: float | None = None  # seconds a prepared summary of it took


def _averaged(old: float | None, new: float) -> float:
    return new if old is None else old + _WEIGHT * (new - old)


class AheadPace:
    """Per process and conversation: the growth per turn, the time between turns, and how
    long its prepared summaries take."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or _default_clock
        self._paces: OrderedDict[Hashable, _Pace] = OrderedDict()

    def observe(self, key: Hashable, tokens: int) -> None:
        """A turn of conversation `key` came with `tokens` tokens of context. A count that
        did not grow (the same request again) says nothing; one that shrank (the context
        was compacted) starts the measure again from it."""
        now = self._clock()
        pace = self._paces.get(key)
        if pace is None:
            self._paces[key] = _Pace(now, tokens)
            while len(self._paces) > _REMEMBERED:
                self._paces.popitem(last=False)
            return
        self._paces.move_to_end(key)
        if tokens < pace.tokens:
            pace.seen_at, pace.tokens = now, tokens
            return
        if tokens == pace.tokens or now <= pace.seen_at:
            return
        pace.growth = _averaged(pace.growth, tokens - pace.tokens)
        pace.seconds = _averaged(pace.seconds, now - pace.seen_at)
        pace.seen_at, pace.tokens = now, tokens

    def summary_took(self, key: Hashable, seconds: float) -> None:
        """A prepared summary of conversation `key` was made in `seconds` (summarizer
        call included)."""
        pace = self._paces.get(key)
        if pace is not None:
            pace.summary = _averaged(pace.summary, max(0.0, seconds))

    def in_time(self, key: Hashable, distance: int) -> bool:
        """True when the summary of conversation `key`, `distance` tokens under its
        threshold, should start now (also whenever its pace is not known yet)."""
        pace = self._paces.get(key)
        if pace is None or pace.growth is None or pace.seconds is None or pace.summary is None:
            return True
        return crossing_within_lead(distance, pace.growth, pace.seconds, pace.summary)
