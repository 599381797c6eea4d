"""The deeper cut of a session's compaction (issue 22.5): kept tails that cannot fit."""

from __future__ import annotations

from app.engine.compaction.deeper_cut import deeper_plan, tokens_after_cut
from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.orchestration import plan_compaction
from tests.unit.factories import assistant, user

MARKER = SummaryMarker()


def test_a_tail_over_the_threshold_is_cut_deeper_to_half_the_room() -> None:
    messages = [user("a"), assistant("b"), user("huge"), assistant("c"), user("d"), assistant("e")]
    per_message = [100, 100, 3_000, 400, 400, 400]
    plan = plan_compaction(messages, per_message, 3_500, 0, MARKER)
    assert plan.cut_index == 2  # the huge message is kept
    deeper = deeper_plan(messages, per_message, plan, sum(per_message), 2_000, 0, 0, MARKER)
    # Half of the 2,000-token room is kept: from where the kept sum reaches 1,000.
    assert deeper is not None and deeper.cut_index == 3
    assert tokens_after_cut(sum(per_message), per_message, 0, 3, 300) == 1_500


def test_no_deeper_plan_when_it_fits_or_no_later_cut_exists() -> None:
    messages = [user("a"), assistant("b"), user("huge")]
    per_message = [100, 100, 3_000]
    plan = plan_compaction(messages, per_message, 500, 0, MARKER)
    total = sum(per_message)
    assert deeper_plan(messages, per_message, plan, total, 5_000, 100, 0, MARKER) is None
    # Over, but the huge message is the last one: nothing to cut later.
    assert deeper_plan(messages, per_message, plan, total, 1_500, 100, 0, MARKER) is None
