"""Fidelity over many compactions (SPEC §14), through the service's compaction path: what the
user planted survives 10 forced rounds, whatever the summarizer keeps — the extractive one,
or a model that forgets everything and leaves it to the restoration step."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.engine.compaction.marker import SummaryMarker
from app.engine.extractive.budget import DEFAULT_BUDGETS
from app.engine.extractive.sections import parse_summary
from app.main import build_state
from app.services.compaction import CompactionService
from app.services.history import CompactOptions, HistoryInput
from app.settings import Settings
from bench.fidelity_canaries import build_session
from tests.fidelity_scenario import (
    CALLER_PINS,
    FILE_MODIFIED,
    FILES_READ,
    KINDS,
    PLANTED_ERROR,
    ForgetfulSummarizer,
    RoundResult,
    run_rounds,
)

ROUNDS = 10
_REPLACED = ("replaces earlier", "instead of")


@pytest.fixture(scope="module")
def extractive() -> CompactionService:
    state = build_state(Settings(summarizer="extractive"))
    state.tokenizers.warm()
    return state.compaction


@pytest.fixture(scope="module")
def forgetful(extractive: CompactionService) -> CompactionService:
    return CompactionService(extractive.estimation, ForgetfulSummarizer())


def run(service: CompactionService, *pins: str) -> list[RoundResult]:
    return asyncio.run(run_rounds(service, ROUNDS, pins))


@pytest.mark.parametrize("summarizer", ["extractive", "forgetful"])
def test_every_planted_kind_survives_every_round_without_any_pin(
    summarizer: str, request: pytest.FixtureRequest
) -> None:
    results = run(request.getfixturevalue(summarizer))
    assert len(results) == ROUNDS
    for result in results:
        assert result.survival == dict.fromkeys(KINDS, 1.0), (summarizer, result.number)
        # On the summary alone, not only somewhere in the kept tail.
        for fact in ("port 5433", "`--since` filter", "Keep Python 3.9 compatibility."):
            assert fact in result.summary, (summarizer, result.number, fact)


def test_the_forgetful_model_really_forgets_and_restoration_puts_it_back(
    forgetful: CompactionService,
) -> None:
    results = run(forgetful, *CALLER_PINS)
    assert all(r.restored > 0 for r in results)
    assert all(CALLER_PINS[0] in r.summary for r in results)


@pytest.mark.parametrize("summarizer", ["extractive", "forgetful"])
def test_files_and_the_first_error_are_carried_through_every_round(
    summarizer: str, request: pytest.FixtureRequest
) -> None:
    results = run(request.getfixturevalue(summarizer))
    for result in results:
        sections = parse_summary(result.summary)
        assert FILE_MODIFIED in sections.files_modified, result.number
        # Read, then modified: listed once, as modified.
        assert set(FILES_READ) - {FILE_MODIFIED} <= set(sections.files_read), result.number
        assert sections.first_error == PLANTED_ERROR, result.number
        # Files of every round so far, not only of the last one.
        for earlier in range(1, result.number):
            assert f"src/reports/module_{earlier}.py" in sections.files_read


def test_the_summary_stays_within_its_budget_over_the_rounds(
    extractive: CompactionService,
) -> None:
    results = run(extractive)
    tokenizer = extractive.estimation.tokenizers.get("o200k_base")
    sizes = [tokenizer.count(r.summary) for r in results]
    assert max(sizes) <= DEFAULT_BUDGETS.total
    assert sizes[-1] < 2 * sizes[0]


def _summary(messages: list[Any]) -> str:
    content = messages[0]["content"]
    if not isinstance(content, str):
        content = "\n".join(b.get("text", "") for b in content)
    return SummaryMarker.parse(content) or ""


@pytest.mark.parametrize("shape", ["openai", "anthropic", "text_action"])
def test_a_generated_canary_session_keeps_every_canary_and_no_stale_value(
    shape: str, extractive: CompactionService
) -> None:
    """One development seed of bench/fidelity.py's canaries, 5 rounds keeping the newest 30%:
    every folded canary is in the summary (an updated one with its new value), no line
    still states a replaced value as current, and no rule-like line of tool output reached
    the Goal or the Constraints."""
    session = build_session(0, "dev", shape)
    fmt = "anthropic" if shape == "anthropic" else "openai"
    context: list[Any] = []
    previous = 0
    for messages in session.rounds:
        context = [*context, *messages[previous:]]
        previous = len(messages)
        counted = extractive.estimation.count(HistoryInput(messages=context, format=fmt))
        history = HistoryInput(
            messages=context, format=fmt, keep_recent_tokens=int(counted.estimate.tokens * 0.3)
        )
        outcome = asyncio.run(extractive.compact(history, CompactOptions(force=True)))
        assert outcome.messages is not None
        context = outcome.messages
    summary = _summary(context).casefold()
    lines = summary.splitlines()
    kept_tail = len(context) - 1
    folded = len(session.rounds[-1]) - kept_tail
    for planting in session.plantings:
        if planting.at >= folded:
            continue
        canary = planting.canary
        updated = planting.update_at is not None and planting.update_at < folded
        checks = canary.update.checks if canary.update and updated else canary.checks
        assert any(all(c in line for c in checks) for line in lines), canary.text
        stale = [
            line
            for line in lines
            if all(c in line for c in canary.checks) and not any(m in line for m in _REPLACED)
        ]
        assert not (updated and stale), (canary.text, stale)
    guarded = summary.split("## progress")[0]
    assert not [n for n in session.noise if n.casefold() in guarded]
