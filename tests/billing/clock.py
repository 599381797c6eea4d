"""The clock cache lifetimes run on: simulated, advanced by whoever drives the fake (the
bench advances it by the agent's think time each turn), never the wall clock."""

from __future__ import annotations

import threading


class SimulatedClock:
    """Seconds since the start of a run; only `advance` moves it."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        """Moves time forward (never back)."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        with self._lock:
            self._now += seconds
