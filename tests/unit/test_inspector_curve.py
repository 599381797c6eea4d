"""The token curve and the summary diff, by hand-worked examples."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.api.ui.chart import layout_chart
from app.services.inspector.curve import CompactionCost, token_curve
from app.services.inspector.summary_diff import diff_summaries


def _cost(
    ordinal: int, covered: int, first_kept: int, summary: int, delta: int = 0
) -> CompactionCost:
    return CompactionCost(
        ordinal=ordinal,
        covered_seq=covered,
        first_kept_seq=first_kept,
        summary_tokens=summary,
        cleared_delta=delta,
        recorded_before=0,
        recorded_after=0,
    )


def test_without_compactions_the_context_grows_by_each_entry() -> None:
    curve = token_curve(
        [10, 20, 30],
        fixed_tokens=5,
        reply_priming=3,
        system_prefix_count=0,
        compactions=[],
        threshold=100,
        context_window=200,
    )
    assert [p.tokens for p in curve.points] == [18, 38, 68]
    assert curve.drops == ()


def test_after_a_compaction_the_context_is_prefix_summary_and_kept_tail() -> None:
    # Entry 0 is a system prefix; the compaction ran after entry 5 and kept 4 and 5;
    # its placeholders saved 2 tokens on that tail.
    curve = token_curve(
        [1, 10, 10, 10, 10, 10, 10, 10],
        fixed_tokens=0,
        reply_priming=0,
        system_prefix_count=1,
        compactions=[_cost(1, covered=6, first_kept=4, summary=7, delta=-2)],
        threshold=40,
        context_window=100,
    )
    assert [p.tokens for p in curve.points] == [1, 11, 21, 31, 41, 51, 36, 46]
    assert [p.built_on for p in curve.points] == [0, 0, 0, 0, 0, 0, 1, 1]
    (drop,) = curve.drops
    assert (drop.seq, drop.before, drop.after) == (5, 51, 1 + 7 + 20 - 2)


def test_compactions_in_a_row_chain_their_drops() -> None:
    curve = token_curve(
        [10] * 6,
        fixed_tokens=0,
        reply_priming=0,
        system_prefix_count=0,
        compactions=[_cost(2, 6, 5, 3), _cost(1, 6, 3, 5)],
        threshold=40,
        context_window=100,
    )
    assert [(d.ordinal, d.before, d.after) for d in curve.drops] == [(1, 60, 35), (2, 35, 13)]
    chart = layout_chart(curve)
    assert chart.vertex_count == 6 + 2
    assert len(chart.markers) == 2


def test_a_summary_diff_marks_what_was_added_and_removed() -> None:
    diff = diff_summaries(
        "Goal: fix the parser.\nDone: read lexer.py",
        "Goal: fix the parser.\nDone: read lexer.py, ran tests",
    )
    assert [(s.kind, s.text) for s in diff.current if s.kind == "added"] == [
        ("added", "lexer.py, ran tests")
    ]
    assert [(s.kind, s.text) for s in diff.previous if s.kind == "removed"] == [
        ("removed", "lexer.py")
    ]
    assert diff.added_words == 3 and diff.removed_words == 1


@given(st.text(max_size=200), st.text(max_size=200))
def test_each_side_of_a_diff_reads_exactly_as_its_summary(old: str, new: str) -> None:
    diff = diff_summaries(old, new)
    assert "".join(s.text for s in diff.previous) == old
    assert "".join(s.text for s in diff.current) == new
    assert all(s.kind != "added" for s in diff.previous)
    assert all(s.kind != "removed" for s in diff.current)


def test_very_long_summaries_are_compared_by_lines() -> None:
    old = "".join(f"- [x] read src/module_{i}.py\n" for i in range(4_000))
    new = old.replace("module_7.py", "module_7b.py") + "- [ ] run the tests\n"
    diff = diff_summaries(old, new)
    added = [s.text for s in diff.current if s.kind == "added"]
    assert added == ["- [x] read src/module_7b.py\n", "- [ ] run the tests\n"]
    assert "".join(s.text for s in diff.current) == new
