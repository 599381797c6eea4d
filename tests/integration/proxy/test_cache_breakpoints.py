"""What the service forwards is cache-correct (SPEC §15, issue 22.2): a coding agent with
Claude Code's `cache_control` placement, replayed against the billing fake through every
mode that rewrites its history — session-bound, transparent, native compaction.

Every request is accepted (never more than 4 breakpoints), stored messages never bring
the breakpoint of the request they came in, the summary message carries one of its own,
and between two compactions each request starts with the whole previous one, so the
previous prompt is read back from the cache.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.settings import Settings
from tests.billing import Bill, BillingUpstream, SimulatedClock
from tests.billing.prefixes import extends
from tests.integration.live_server import live_service
from tests.integration.proxy.coding_agent import CodingAgent, ToolCalls

CLAUDE = "claude-sonnet-4-5-20250929"
# A 12k window: threshold 10,200; a turn adds ~450 tokens, so 40 turns compact a few times.
WINDOW = 12_000
TURNS = 40


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock()


@pytest.fixture
def upstream(clock: SimulatedClock) -> Iterator[BillingUpstream]:
    with BillingUpstream(clock, ToolCalls()) as fake:
        yield fake


@pytest.fixture
def proxy_url(tmp_path: Path, upstream: BillingUpstream) -> Iterator[str]:
    models = tmp_path / "models.json"
    entry = {"context_window": WINDOW, "max_output_tokens": 4096, "encoding": "o200k_base"}
    models.write_text(json.dumps({"models": {CLAUDE: {**entry, "provider": "anthropic"}}}))
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
        upstream_anthropic_url=upstream.base_url,
        models_file=models,
        state_key="cache-breakpoints-test-" + "k" * 10,
    )
    with live_service(settings) as url:
        yield url


def summary_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The forwarded summary message, if the request has one."""
    for message in body["messages"]:
        content = message["content"]
        text = content if isinstance(content, str) else content[0].get("text", "")
        if message["role"] == "user" and text.startswith(SUMMARY_MARKER_PREFIX):
            return dict(message)
    return None


def replay(agent: CodingAgent, upstream: BillingUpstream, clock: SimulatedClock) -> None:
    try:
        for _ in agent.turns(TURNS):
            clock.advance(20)
    finally:
        agent.http.close()
    assert len(upstream.bills) == TURNS


def assert_cache_correct(upstream: BillingUpstream, min_prefix_changes: int = 2) -> None:
    """The rules, bill by bill: accepted, at most 4 breakpoints, the summary marked, and
    every request that does not change the prefix reads all of the previous one."""
    bills: list[Bill] = upstream.bills
    bodies = upstream.bodies("messages")
    assert [b.status for b in bills] == [200] * len(bills), [b.error for b in bills if b.error]
    assert max(b.breakpoints for b in bills) <= 4
    changes = 0
    for index in range(1, len(bills)):
        previous, body, bill = bodies[index - 1], bodies[index], bills[index]
        summary = summary_of(body)
        if summary is not None:
            assert summary["content"][-1].get("cache_control") == {"type": "ephemeral"}
        if not extends("messages", previous, body):
            changes += 1  # a compaction: a new summary, a new prefix
            continue
        # Between compactions: the same summary bytes, the whole previous prompt read back.
        assert summary_of(previous) == summary
        assert bill.read == bills[index - 1].prompt_tokens, f"turn {index}"
    assert changes >= min_prefix_changes


def test_a_session_bound_agent_is_never_refused_and_reads_its_prefix(
    proxy_url: str, upstream: BillingUpstream, clock: SimulatedClock
) -> None:
    created = httpx.post(f"{proxy_url}/sessions", json={"model": CLAUDE, "format": "anthropic"})
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    agent = CodingAgent(proxy_url, CLAUDE, {"x-compactor-session": session})
    replay(agent, upstream, clock)
    assert_cache_correct(upstream)
    compactions = httpx.get(f"{proxy_url}/sessions/{session}/compactions").json()["compactions"]
    assert len(compactions) >= 2
    # The transcript keeps what the caller sent, breakpoints included.
    transcript = httpx.get(f"{proxy_url}/sessions/{session}/transcript?limit=5").json()
    assert transcript["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_a_streamed_session_bound_agent_is_cache_correct(
    proxy_url: str, upstream: BillingUpstream, clock: SimulatedClock
) -> None:
    created = httpx.post(f"{proxy_url}/sessions", json={"model": CLAUDE, "format": "anthropic"})
    agent = CodingAgent(
        proxy_url, CLAUDE, {"x-compactor-session": created.json()["id"]}, extra={"stream": True}
    )
    replay(agent, upstream, clock)
    assert_cache_correct(upstream)


def test_a_transparent_agent_gets_a_marked_summary_and_a_stable_prefix(
    proxy_url: str, upstream: BillingUpstream, clock: SimulatedClock
) -> None:
    agent = CodingAgent(proxy_url, CLAUDE, {"x-compactor-mode": "transparent"})
    replay(agent, upstream, clock)
    assert_cache_correct(upstream)


def test_native_compaction_is_cache_correct(
    proxy_url: str, upstream: BillingUpstream, clock: SimulatedClock
) -> None:
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 9_000}}
    agent = CodingAgent(
        proxy_url,
        CLAUDE,
        {"x-compactor-mode": "native"},
        extra={"context_management": {"edits": [edit]}},
    )
    replay(agent, upstream, clock)
    assert_cache_correct(upstream)
