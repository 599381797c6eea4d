"""SPEC §5.2: the cut point walks back, lands on a valid point, keeps tool pairs whole."""

from __future__ import annotations

import pytest

from app.engine.compaction.cut_point import find_cut_index
from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.orchestration import plan_compaction
from app.engine.errors import NothingToCompactError
from tests.unit.factories import assistant, system, tool, user


def test_cut_lands_at_the_message_where_the_kept_sum_reaches_the_target() -> None:
    messages = [user("a"), assistant("b"), user("c"), assistant("d")]
    assert find_cut_index(messages, [10, 10, 10, 10], keep_recent_tokens=20) == 2


def test_cut_moves_older_to_a_valid_cut_point_not_a_tool_result() -> None:
    # The design chapter's M8/M9: a test run and its result stay together.
    messages = [user("fix it"), assistant("", ("t7", "bash")), tool("t7", "1 failed")]
    assert find_cut_index(messages, [5, 5, 50], keep_recent_tokens=20) == 1


def test_parallel_calls_with_out_of_order_results_are_not_split() -> None:
    messages = [
        user("go"),
        assistant("", ("a", "read"), ("b", "read")),
        tool("b"),
        tool("a"),
        user("next"),
        assistant("done"),
    ]
    # The target alone would cut at index 3 (a tool result) → nearest valid point is 1.
    assert find_cut_index(messages, [5, 5, 5, 30, 1, 1], keep_recent_tokens=32) == 1


def test_a_result_logged_late_pulls_its_call_into_the_tail() -> None:
    messages = [
        user("go"),
        assistant("", ("a", "read")),
        user("meanwhile"),
        assistant("thinking"),
        tool("a", "late"),
    ]
    # Reaching the target at index 2 would separate call `a` (1) from its result (4).
    assert find_cut_index(messages, [5, 5, 5, 5, 10], keep_recent_tokens=20) == 1


def test_history_smaller_than_the_target_has_nothing_to_compact() -> None:
    messages = [user("a"), assistant("b")]
    assert find_cut_index(messages, [5, 5], keep_recent_tokens=100) == 0
    with pytest.raises(NothingToCompactError):
        plan_compaction(messages, [5, 5], keep_recent_tokens=100)


def test_system_messages_and_previous_summary_are_not_summarized_again() -> None:
    summary = user(SummaryMarker().render("## Goal\nold goal"))
    messages = [system("rules"), summary, user("a"), assistant("b"), user("c"), assistant("d")]
    plan = plan_compaction(messages, [9, 9, 10, 10, 10, 10], 20, inline_system_count=1)
    assert plan.previous_summary == "## Goal\nold goal"
    assert plan.first_summarized == 2
    assert plan.to_summarize == (messages[2], messages[3])
    assert plan.cut_index == 4


def test_only_a_previous_summary_before_the_cut_means_nothing_to_compact() -> None:
    summary = user(SummaryMarker().render("## Goal\nold"))
    messages = [summary, user("a"), assistant("b")]
    with pytest.raises(NothingToCompactError, match="previous summary"):
        plan_compaction(messages, [5, 30, 30], keep_recent_tokens=40)


def test_a_tail_of_only_tool_results_falls_back_to_nothing_to_compact() -> None:
    messages = [assistant("", ("x", "bash")), tool("x", "big")]
    assert find_cut_index(messages, [5, 100], keep_recent_tokens=10) == 0


def test_ids_reused_every_turn_pair_turn_by_turn() -> None:
    # Some OpenAI-compatible backends call every tool `call_0`.
    turns = []
    for n in range(4):
        turns += [user(f"step {n}"), assistant("", ("call_0", "bash")), tool("call_0"), assistant()]
    per_message = [10] * len(turns)
    unique = []
    for n in range(4):
        unique += [user(f"step {n}"), assistant("", (f"c{n}", "bash")), tool(f"c{n}"), assistant()]
    assert find_cut_index(turns, per_message, 35) == find_cut_index(unique, per_message, 35) == 12


def test_a_reasoning_item_stays_with_the_item_it_led_to() -> None:
    # Responses: [reasoning, function_call] travel together; the kept tail may start at
    # the reasoning item, never between it and its call.
    from dataclasses import replace

    reasoning = replace(assistant("thinking about it"), binds_to_next=True)
    messages = [user("go"), assistant("ok"), reasoning, assistant("", ("c", "run")), tool("c")]
    # The walk back reaches the call (index 3): the cut moves to the reasoning item.
    assert find_cut_index(messages, [5, 5, 5, 5, 30], keep_recent_tokens=35) == 2
    # Two reasoning items in a row move together too.
    chained = [user("go"), assistant("ok"), reasoning, reasoning, assistant("done")]
    assert find_cut_index(chained, [5, 5, 5, 5, 30], keep_recent_tokens=30) == 2
