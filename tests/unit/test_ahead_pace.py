"""SPEC §16: a summary prepared ahead starts past the soft threshold once the threshold
is expected within a summary's time plus one turn — not turns before it, when all that
arrives meanwhile would be kept verbatim after the prepared cut."""

from __future__ import annotations

from app.engine.compaction.ahead import crossing_within_lead
from app.services.ahead_pace import AheadPace


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def paced(turns: int, growth: int, seconds: float) -> tuple[AheadPace, Clock]:
    clock = Clock()
    pace = AheadPace(clock)
    for turn in range(turns):
        pace.observe("conversation", 10_000 + turn * growth)
        clock.now += seconds
    return pace, clock


def test_the_lead_is_a_summarys_growth_plus_one_turn() -> None:
    # 1,000 tokens every 5 s, a 3 s summary: 1,600 tokens of lead.
    assert crossing_within_lead(1_600, 1_000, 5.0, 3.0)
    assert not crossing_within_lead(1_700, 1_000, 5.0, 3.0)
    # A 20 s summary needs five turns of lead.
    assert crossing_within_lead(5_000, 1_000, 5.0, 20.0)
    # Past the threshold already, or nothing known about the growth: now.
    assert crossing_within_lead(0, 1_000, 5.0, 3.0)
    assert crossing_within_lead(9_000, 0, 5.0, 3.0)


def test_nothing_measured_yet_starts_at_once() -> None:
    pace, clock = paced(turns=4, growth=1_000, seconds=5.0)
    # No summary of this conversation timed yet: the soft threshold alone decides.
    assert pace.in_time("conversation", 20_000)
    pace.summary_took("conversation", 3.0)
    assert not pace.in_time("conversation", 20_000)
    # Another conversation's summaries say nothing about this one's.
    pace.observe("another", 30_000)
    clock.now += 5
    pace.observe("another", 31_000)
    assert pace.in_time("another", 20_000)


def test_a_slow_summary_starts_further_ahead() -> None:
    pace, _ = paced(turns=6, growth=1_000, seconds=5.0)
    pace.summary_took("conversation", 3.0)
    assert not pace.in_time("conversation", 3_000)
    pace.summary_took("conversation", 60.0)
    pace.summary_took("conversation", 60.0)
    assert pace.in_time("conversation", 3_000)


def test_the_same_request_again_says_nothing_and_a_compacted_one_starts_over() -> None:
    pace, clock = paced(turns=4, growth=1_000, seconds=5.0)
    pace.summary_took("conversation", 3.0)
    # A retry of the last turn, a minute later, neither slows the pace nor speeds it.
    clock.now += 60
    pace.observe("conversation", 13_000)
    assert not pace.in_time("conversation", 2_000)
    assert pace.in_time("conversation", 1_500)
    # Compacted: the count fell; the pace measured before still holds.
    pace.observe("conversation", 4_000)
    assert pace.in_time("conversation", 1_500)
