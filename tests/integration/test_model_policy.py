"""Over HTTP: answers say whether the model is known and where its window came from, and
the per-model policy of the configuration file decides the threshold, the kept tail and
the strategy (issue 26.1, 26.2, SPEC §18)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry
from tests.conftest import AUTOCOMPACTED_ANTHROPIC, BIG_OPENAI, CLAUDE_CODE, load_json

HELLO = [{"role": "user", "content": "hello"}]


def _estimate(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/estimate", json={"messages": HELLO, **body})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


@pytest.fixture
def configured(
    tmp_path: Path, tokenizers: TokenizerRegistry, request: pytest.FixtureRequest
) -> Iterator[TestClient]:
    """A client of an app started with the configuration file the test parametrizes."""
    path = tmp_path / "compactor.toml"
    path.write_text(request.param, encoding="utf-8")
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}", config=path)
    with TestClient(create_app(settings, tokenizers=tokenizers)) as client:
        yield client


def test_an_unknown_model_says_so_and_is_logged_once(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="compactor.models"):
        first = _estimate(client, model="acme-house-model")
        _estimate(client, model="acme-house-model")
    assert first["model_known"] is False
    assert (first["context_window"], first["context_window_source"]) == (128_000, "fallback")
    lines = [r.getMessage() for r in caplog.records if r.name == "compactor.models"]
    assert len(lines) == 1 and "acme-house-model" in lines[0]


def test_a_gateway_name_gets_the_window_of_the_model_it_names(client: TestClient) -> None:
    answer = _estimate(client, model="anthropic/claude-sonnet-4.6")
    assert answer["model_known"] is True and answer["model"] == "claude-sonnet-4-6"
    assert (answer["context_window"], answer["context_window_source"]) == (1_000_000, "alias")
    assert answer["threshold"] == 850_000
    known = _estimate(client, model="gpt-4o")
    assert (known["context_window_source"], known["model_known"]) == ("registry", True)


def test_a_window_the_request_gives_says_request(client: TestClient) -> None:
    answer = _estimate(client, model="acme-house-model", context_window=50_000)
    assert (answer["context_window"], answer["context_window_source"]) == (50_000, "request")
    assert answer["model_known"] is False


def test_compact_answers_say_the_window_and_where_it_came_from(client: TestClient) -> None:
    out = client.post("/compact", json={"messages": HELLO, "model": "openai/gpt-4o"}).json()
    assert out["compacted"] is False
    assert (out["context_window"], out["context_window_source"], out["model_known"]) == (
        128_000,
        "alias",
        True,
    )


def test_a_session_context_says_whether_its_model_is_known(client: TestClient) -> None:
    session = client.post("/sessions", json={"model": "acme-house-model"}).json()
    client.post(f"/sessions/{session['id']}/messages", json={"messages": HELLO})
    estimate = client.get(f"/sessions/{session['id']}/context").json()["estimate"]
    assert estimate["model_known"] is False and estimate["context_window_source"] == "fallback"


@pytest.mark.parametrize(
    "configured",
    ['[model_aliases]\n"litellm-big" = "claude-sonnet-4-6"\n'],
    indirect=True,
    ids=["config"],
)
def test_an_aliased_1m_model_is_not_compacted_at_the_fallback_threshold(
    configured: TestClient,
) -> None:
    """The issue's report: a LiteLLM alias of a 1M-window model compacted at 171k."""
    body = load_json(AUTOCOMPACTED_ANTHROPIC)
    unknown = configured.post("/estimate", json={**body, "model": "litellm-other"}).json()
    assert unknown["should_compact"] and unknown["context_window_source"] == "fallback"
    aliased = configured.post("/estimate", json={**body, "model": "litellm-big"}).json()
    assert aliased["tokens"] == unknown["tokens"] > 160_000
    assert (aliased["context_window"], aliased["context_window_source"]) == (1_000_000, "alias")
    assert aliased["threshold"] == 850_000 and not aliased["should_compact"]


@pytest.mark.parametrize(
    "configured",
    [
        '[models."claude-*"]\nreserve_tokens = 10000\n\n'
        '[models."claude-sonnet-4-5*"]\ntrigger_ratio = 0.9\n\n'
        '[models."my-house-model"]\ncontext_window = 64000\n'
    ],
    indirect=True,
    ids=["config"],
)
def test_the_policy_of_the_model_sets_its_threshold(configured: TestClient) -> None:
    sonnet = _estimate(configured, model="claude-sonnet-4-5-20250929")
    # min(floor(0.9 × 200,000), 200,000 − 10,000)
    assert (sonnet["reserve_tokens"], sonnet["threshold"]) == (10_000, 180_000)
    assert sonnet["context_window_source"] == "registry"
    opus = _estimate(configured, model="claude-opus-4")
    assert (opus["reserve_tokens"], opus["threshold"]) == (10_000, 170_000)
    house = _estimate(configured, model="my-house-model")
    assert house["model_known"] is True
    assert (house["context_window"], house["context_window_source"]) == (64_000, "config")
    # A request's own settings win over the policy.
    mine = _estimate(configured, model="claude-sonnet-4-5", reserve_tokens=40_000)
    assert (mine["reserve_tokens"], mine["threshold"]) == (40_000, 160_000)


@pytest.mark.parametrize(
    "configured",
    ['[models."gpt-4o*"]\nkeep_recent_tokens = 6000\n'],
    indirect=True,
    ids=["config"],
)
def test_the_policy_keep_recent_is_the_kept_tail_of_a_compaction(
    configured: TestClient,
) -> None:
    body = {**load_json(BIG_OPENAI), "model": "gpt-4o", "force": True}
    by_policy = configured.post("/compact", json=body).json()
    by_request = configured.post("/compact", json={**body, "keep_recent_tokens": 6_000}).json()
    default = configured.post("/compact", json={**body, "keep_recent_tokens": 20_000}).json()
    assert by_policy["compacted"] and by_policy["cut_index"] == by_request["cut_index"]
    assert by_policy["cut_index"] != default["cut_index"]


@pytest.mark.parametrize(
    "configured",
    ['[models."gpt-4o*"]\nstrategy = "clear_tool_results"\n'],
    indirect=True,
    ids=["config"],
)
def test_the_policy_strategy_applies_when_the_request_names_none(
    configured: TestClient,
) -> None:
    body = {**load_json(CLAUDE_CODE / "tool_heavy.openai.json"), "model": "gpt-4o", "force": True}
    out = configured.post("/compact", json=body).json()
    assert (out["strategy"], out["applied"]) == ("clear_tool_results", ["clear_tool_results"])
    asked = configured.post("/compact", json={**body, "strategy": "summarize"}).json()
    assert asked["strategy"] == "summarize" and "clear_tool_results" not in asked["applied"]


def test_an_anchored_estimate_says_why_it_is_not_exact(client: TestClient) -> None:
    """Issue 26.3: `exact: false` with `breakdown.estimated: []` for a usage anchor."""
    messages = [*HELLO, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "?"}]
    usage = [{"message_index": 1, "prompt_tokens": 8, "completion_tokens": 2}]
    answer = _estimate(client, model="gpt-4o", usage=usage, messages=messages)
    assert answer["method"] == "usage+tokenizer" and answer["exact"] is False
    assert answer["breakdown"]["estimated"] == ["usage_anchor"]
    plain = _estimate(client, model="gpt-4o")
    assert plain["exact"] is True and plain["breakdown"]["estimated"] == []
