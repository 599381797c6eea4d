"""SPEC §4 and §5.5: thresholds, the strict decision and the summary budget."""

from __future__ import annotations

import pytest

from app.engine.compaction.thresholds import (
    CompactionSettings,
    compaction_threshold,
    should_compact,
    summary_output_budget,
)


@pytest.mark.parametrize(
    ("window", "expected"),
    [(200_000, 167_232), (1_000_000, 850_000), (128_000, 95_232), (32_769, 1)],
)
def test_known_window_threshold_is_the_smaller_of_85_percent_and_window_minus_reserve(
    window: int, expected: int
) -> None:
    assert compaction_threshold(CompactionSettings(context_window=window)) == expected


def test_design_chapter_example_160k_does_not_compact_but_180k_does() -> None:
    settings = CompactionSettings(context_window=200_000)
    assert not should_compact(160_000, settings)
    assert should_compact(180_000, settings)


def test_exactly_at_the_threshold_does_not_compact() -> None:
    settings = CompactionSettings(context_window=200_000)
    assert not should_compact(167_232, settings)
    assert should_compact(167_233, settings)


def test_small_window_not_above_reserve_uses_85_percent_at_least_one() -> None:
    assert compaction_threshold(CompactionSettings(context_window=32_768)) == 27_852
    assert compaction_threshold(CompactionSettings(context_window=8_000)) == 6_800
    assert compaction_threshold(CompactionSettings(context_window=1)) == 1


def test_unknown_window_uses_fallback_minus_reserve() -> None:
    assert compaction_threshold(CompactionSettings(context_window=None)) == 128_000 - 32_768
    assert (
        compaction_threshold(CompactionSettings(context_window=None, fallback_window=64_000))
        == 64_000 - 32_768
    )


def test_explicit_trigger_wins() -> None:
    settings = CompactionSettings(context_window=200_000, trigger_tokens=1_000)
    assert compaction_threshold(settings) == 1_000
    assert should_compact(1_001, settings)


def test_custom_reserve_changes_threshold() -> None:
    assert compaction_threshold(CompactionSettings(context_window=200_000, reserve_tokens=0)) == (
        170_000
    )


def test_summary_budget_is_80_percent_of_reserve_capped_by_model() -> None:
    assert summary_output_budget(32_768, None) == 26_214
    assert summary_output_budget(32_768, 8_192) == 8_192
    assert summary_output_budget(10_000, 64_000) == 8_000


def test_unknown_window_with_a_reserve_above_the_fallback_stays_positive() -> None:
    settings = CompactionSettings(context_window=None, reserve_tokens=150_000)
    assert compaction_threshold(settings) == 108_800
    assert not should_compact(10, settings)
