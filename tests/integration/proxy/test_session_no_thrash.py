"""A session-bound agent does not thrash (issue 22.5): unless the caller set
`keep_recent_tokens`, session mode keeps at most a quarter of the threshold verbatim, as
transparent mode does, so one compaction buys many turns instead of two or three — with
compactions made inline and prepared ahead (SPEC §16) alike."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.settings import Settings
from tests.billing import BillingUpstream, SimulatedClock
from tests.integration.live_server import live_service
from tests.integration.proxy.coding_agent import CodingAgent, ToolCalls

CLAUDE = "claude-sonnet-4-5-20250929"
# The window: threshold min(0.85 · 64,000, 64,000 − 32,768) = 31,232, while the
# default keep_recent_tokens is 20,000.
WINDOW, THRESHOLD = 64_000, 31_232
TURNS = 36


@pytest.fixture(params=["off", 0.8], ids=["inline", "prepared-ahead"])
def proxy_url(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    clock = SimulatedClock()
    with BillingUpstream(clock, ToolCalls()) as upstream:
        models = tmp_path / "models.json"
        entry = {"context_window": WINDOW, "max_output_tokens": 4096, "encoding": "o200k_base"}
        models.write_text(json.dumps({"models": {CLAUDE: {**entry, "provider": "anthropic"}}}))
        settings = Settings(
            database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
            upstream_anthropic_url=upstream.base_url,
            models_file=models,
            prepare_ahead_ratio=request.param,
        )
        with live_service(settings) as url:
            yield url


def replay(url: str, session_settings: dict[str, int]) -> list[dict[str, int]]:
    body = {"model": CLAUDE, "format": "anthropic", **session_settings}
    created = httpx.post(f"{url}/sessions", json=body)
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    agent = CodingAgent(url, CLAUDE, {"x-compactor-session": session}, result_tokens=2_500)
    try:
        for answer in agent.turns(TURNS):
            assert answer.headers.get("x-compactor-session") == session
    finally:
        agent.http.close()
    listed = httpx.get(f"{url}/sessions/{session}/compactions")
    compactions: list[dict[str, int]] = listed.json()["compactions"]
    return compactions


def test_an_unset_keep_recent_scales_to_the_threshold(
    proxy_url: str, request: pytest.FixtureRequest
) -> None:
    compactions = replay(proxy_url, {})
    assert compactions, "a ~90k-token session with a 31k threshold compacts"
    # A quarter of the threshold kept verbatim, plus the summary and the one turn that
    # crossed it: each compaction leaves room for several turns. A compaction prepared
    # ahead kept its tail at the soft threshold (at least a quarter of that quarter) and
    # the turns since come on top: a little more, still well under the threshold.
    prepared = "prepared-ahead" in request.node.callspec.id
    limit = int(THRESHOLD * 0.6) if prepared else THRESHOLD // 2
    for record in compactions:
        assert record["tokens_after"] <= limit, record
    # ~80k tokens over the threshold, ~20k freed per compaction; with 20,000 kept it was
    # one compaction every ~4 turns (9 here).
    assert len(compactions) <= 5


def test_a_keep_recent_the_caller_set_is_honoured(proxy_url: str) -> None:
    compactions = replay(proxy_url, {"keep_recent_tokens": 20_000})
    assert compactions
    assert all(record["tokens_after"] > 20_000 for record in compactions)
