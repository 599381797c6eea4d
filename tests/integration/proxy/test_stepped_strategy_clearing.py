"""Cache-aware clearing in the strategies (issue 22.3): `clear_tool_results` through REST
`/compact` (a client that resends its originals and forwards what it got back) and in a
bound session clears whole steps of tool results and keeps the same cleared set between
steps, so the prompt cache is re-written once per step; `COMPACTOR_CLEARING=exact` is the
per-request rule, which moves the cleared set on every new tool use. Billed by the
billing fake: prefixes byte-stable between steps, the cleared set unchanged, and each step
at least a step's worth of tool results."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.engine.clearing import CLEARED_RESULT_PREFIX, DEFAULT_CLEAR_STEP_TOKENS
from app.settings import Settings
from tests.billing import BillingUpstream, SimulatedClock
from tests.billing.prefixes import extends
from tests.integration.live_server import live_service
from tests.integration.proxy.coding_agent import ANTHROPIC_HEADERS, CodingAgent, ToolCalls

CLAUDE = "claude-sonnet-4-5-20250929"
# A 200k window (threshold 167,232): the step is the default 20,000, not capped by it.
WINDOW = 200_000
TRIGGER = 6_000
RESULT_TOKENS = 2_000
TURNS = 40
CLEAR = {"trigger": TRIGGER, "keep": 3}


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock()


@contextmanager
def service(tmp_path: Path, upstream: BillingUpstream, clearing: str) -> Iterator[str]:
    models = tmp_path / "models.json"
    entry = {"context_window": WINDOW, "max_output_tokens": 4096, "provider": "anthropic"}
    models.write_text(json.dumps({"models": {CLAUDE: entry}}))
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
        upstream_anthropic_url=upstream.base_url,
        models_file=models,
        clearing=clearing,
    )
    with live_service(settings) as url:
        yield url


def cleared_ids(body: dict[str, Any]) -> list[str]:
    """The tool uses whose result the forwarded body holds as a placeholder."""
    return list(cleared_tokens(body))


def cleared_tokens(body: dict[str, Any]) -> dict[str, int]:
    """Each cleared tool use's result size, as its placeholder says it."""
    found: dict[str, int] = {}
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            text = str(block.get("content", "")) if block.get("type") == "tool_result" else ""
            if text.startswith(CLEARED_RESULT_PREFIX):
                size = re.search(r"([\d,]+) tokens\]", text)
                assert size is not None, text
                found[block["tool_use_id"]] = int(size.group(1).replace(",", ""))
    return found


def steps_of(upstream: BillingUpstream) -> list[tuple[list[str], bool]]:
    """Per forwarded request after the first: its cleared set, and whether its prompt
    starts with all of the previous one's (what a prompt cache can read)."""
    bodies = upstream.bodies("messages")
    return [(cleared_ids(b), extends("messages", a, b)) for a, b in itertools.pairwise(bodies)]


def check_steps(upstream: BillingUpstream, clearing: str) -> None:
    assert all(bill.status == 200 for bill in upstream.bills)
    steps = steps_of(upstream)
    sets = [ids for ids, _ in steps]
    changes = [i for i, (a, b) in enumerate(itertools.pairwise(sets)) if a != b]
    assert changes, "over the trigger of 6,000 tokens, tool results are cleared"
    if clearing == "exact":
        # Every new tool use moves the cleared set: the cache is re-written each turn.
        assert len(changes) >= TURNS - 10
        return
    # Between steps the cleared set stays the same, and the prefix stays byte-stable.
    for index, (ids, stable) in enumerate(steps[1:]):
        if sets[index] == ids:
            assert stable, f"request {index + 2}: same cleared set, yet the prefix moved"
    # A step clears at least a step's worth of tool results, and the set only grows (what
    # was cleared stays cleared).
    sizes = cleared_tokens(upstream.bodies("messages")[-1])
    for before, after in itertools.pairwise([[], *(sets[i + 1] for i in changes)]):
        assert after[: len(before)] == before
        assert sum(sizes[i] for i in after[len(before) :]) >= DEFAULT_CLEAR_STEP_TOKENS
    # Each step is several turns' tool results: the cache is re-written a few times only.
    assert len(changes) <= TURNS // 5


class ResendingClient(CodingAgent):
    """Compacts its original history through REST `/compact` every turn and forwards
    the answer to the model itself (the caller keeps its originals)."""

    service_url: str = ""

    def body(self) -> dict[str, Any]:
        body = super().body()
        request = {
            "format": "anthropic",
            "model": self.model,
            "system": body["system"],
            "tools": body["tools"],
            "messages": body["messages"],
            "strategy": "clear_tool_results",
            "clear": CLEAR,
        }
        answer = self.http.post(f"{self.service_url}/compact", json=request)
        assert answer.status_code == 200, answer.text
        return {**body, "messages": answer.json()["messages"]}


@pytest.mark.parametrize("clearing", ["stepped", "exact"])
def test_rest_clearing_moves_in_steps(tmp_path: Path, clock: SimulatedClock, clearing: str) -> None:
    with BillingUpstream(clock, ToolCalls()) as upstream:
        with service(tmp_path, upstream, clearing) as url:
            agent = ResendingClient(upstream.base_url, CLAUDE, result_tokens=RESULT_TOKENS)
            agent.service_url = url
            try:
                for _ in agent.turns(TURNS):
                    clock.advance(20)
            finally:
                agent.http.close()
        check_steps(upstream, clearing)


@pytest.mark.parametrize("clearing", ["stepped", "exact"])
def test_session_clearing_moves_in_steps(
    tmp_path: Path, clock: SimulatedClock, clearing: str
) -> None:
    with BillingUpstream(clock, ToolCalls()) as upstream:
        with service(tmp_path, upstream, clearing) as url:
            body = {
                "model": CLAUDE,
                "format": "anthropic",
                "strategy": "clear_tool_results",
                "clear": CLEAR,
            }
            created = httpx.post(f"{url}/sessions", json=body)
            assert created.status_code == 201, created.text
            session = created.json()["id"]
            headers = {**ANTHROPIC_HEADERS, "x-compactor-session": session}
            agent = CodingAgent(url, CLAUDE, headers, result_tokens=RESULT_TOKENS)
            try:
                for _ in agent.turns(TURNS):
                    clock.advance(20)
            finally:
                agent.http.close()
            records = httpx.get(f"{url}/sessions/{session}/compactions").json()["compactions"]
        check_steps(upstream, clearing)
        if clearing == "stepped":
            # One record per step, each clearing at least a step's worth of tokens.
            assert 1 <= len(records) <= TURNS // 5
            seen: set[str] = set()
            for record in records:
                new = [c for c in record["cleared_tool_uses"] if c["tool_call_id"] not in seen]
                assert sum(c["tokens_saved"] for c in new) >= 0.9 * DEFAULT_CLEAR_STEP_TOKENS
                seen |= {c["tool_call_id"] for c in record["cleared_tool_uses"]}
