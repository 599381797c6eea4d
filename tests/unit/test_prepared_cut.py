"""SPEC §16: where a compaction prepared ahead of the threshold cuts — it keeps less now
by the growth it expects before the turn that crosses the threshold uses it."""

from __future__ import annotations

from app.engine.compaction.ahead import expected_overshoot, kept_ahead, turn_sizes
from tests.unit.factories import assistant, system, tool, user


def test_a_turn_is_an_assistant_reply_and_what_came_back_after_it() -> None:
    messages = [
        system("rules"),
        user("fix the bug"),
        assistant("", ("c1", "read")),
        tool("c1"),
        assistant("thinking"),
        assistant("", ("c2", "edit")),
        tool("c2"),
        user("thanks"),
    ]
    counts = [50, 10, 5, 300, 7, 6, 40, 3]
    # The system prompt and the first request are no turn; consecutive assistant
    # messages are one reply.
    assert turn_sizes(messages, counts) == [305, 56]


def test_only_the_newest_turns_are_kept() -> None:
    messages = [user("go")] + [m for i in range(20) for m in (assistant(str(i)), user("ok"))]
    counts = [1] + [c for i in range(20) for c in (i, 1)]
    sizes = turn_sizes(messages, counts)
    assert sizes == [i + 1 for i in range(12, 20)]


def test_a_large_turn_weighs_more_in_the_expected_overshoot() -> None:
    # Even turns of 1,000: the crossing one goes 500 past on average.
    assert expected_overshoot([1_000] * 8) == 500
    # One 9,000-token turn among small ones is the likely crossing turn.
    assert expected_overshoot([200] * 7 + [9_000]) > 2_500
    assert expected_overshoot([]) == 0


def test_the_prepared_tail_is_short_by_the_growth_to_come() -> None:
    # 6,000 to go and 1,000 past it expected: of 8,500, 1,500 are kept now.
    assert kept_ahead(8_500, 28_000, 34_000, 1_000) == 1_500
    # More growth ahead than `keep`: the cut keeps only the newest turn.
    assert kept_ahead(8_500, 20_000, 34_000, 1_000) == 1
    # At or past the threshold already, only the overshoot is expected.
    assert kept_ahead(8_500, 35_000, 34_000, 500) == 8_000
    assert kept_ahead(8_500, 35_000, 34_000, 0) == 8_500
