"""Fidelity over many compactions: pinned facts survive 10 forced rounds, whatever the
summarizer keeps — the extractive one, or a model that forgets everything it can."""

from __future__ import annotations

import asyncio

import pytest

from app.engine.extractive.sections import parse_summary
from app.engine.extractive.text import constraint_sentences
from app.main import build_state
from app.services.compaction import CompactionService
from app.settings import Settings
from tests.fidelity_scenario import (
    AUTO_PINNED,
    CALLER_PINS,
    FILE_MODIFIED,
    FILES_READ,
    KINDS,
    PLANTED,
    PLANTED_ERROR,
    ForgetfulSummarizer,
    RoundResult,
    run_rounds,
)

ROUNDS = 10


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


def test_the_scenario_plants_rules_the_service_can_see_and_facts_it_cannot() -> None:
    for kind in KINDS:
        for fact in PLANTED[kind]:
            assert bool(constraint_sentences(fact)) == (kind in AUTO_PINNED), fact


@pytest.mark.parametrize("summarizer", ["extractive", "forgetful"])
def test_stated_rules_survive_every_round_without_any_pin(
    summarizer: str, request: pytest.FixtureRequest
) -> None:
    results = run(request.getfixturevalue(summarizer))
    assert len(results) == ROUNDS
    for result in results:
        for kind in AUTO_PINNED:
            assert result.survival[kind] == 1.0, (summarizer, result.number, kind)


@pytest.mark.parametrize("summarizer", ["extractive", "forgetful"])
def test_every_kind_survives_every_round_when_the_caller_pins_facts_and_goals(
    summarizer: str, request: pytest.FixtureRequest
) -> None:
    results = run(request.getfixturevalue(summarizer), *CALLER_PINS)
    for result in results:
        assert result.survival == dict.fromkeys(KINDS, 1.0), (summarizer, result.number)


def test_the_forgetful_model_really_forgets_what_nobody_pinned(
    forgetful: CompactionService,
) -> None:
    results = run(forgetful)
    assert all(r.survival["fact"] == 0.0 and r.survival["goal"] == 0.0 for r in results)
    # Everything the pinned kinds still hold was put back by the service, every round.
    assert all(r.restored > 0 for r in results)


@pytest.mark.parametrize("summarizer", ["extractive", "forgetful"])
def test_files_and_the_latest_error_are_carried_through_every_round(
    summarizer: str, request: pytest.FixtureRequest
) -> None:
    results = run(request.getfixturevalue(summarizer))
    for result in results:
        assert result.summary
        sections = parse_summary(result.summary)
        assert set(FILES_READ) <= set(sections.files_read), result.number
        assert FILE_MODIFIED in sections.files_modified, result.number
        assert PLANTED_ERROR in sections.errors, result.number
        # Files of every round so far, not only of the last one.
        for earlier in range(1, result.number):
            assert f"src/reports/module_{earlier}.py" in sections.files_read


def test_the_summary_stays_bounded_over_the_rounds(extractive: CompactionService) -> None:
    results = run(extractive, *CALLER_PINS)
    first, last = results[0].tokens_after, results[-1].tokens_after
    assert last < 2 * first
