"""Cache-aware clearing (issue 22.3): the emulated `clear_tool_uses_20250919` moves the
cleared set in steps and keeps it the same between them, so a client that resends its
history re-writes its prompt cache once per step, not on every new tool use;
`applied_edits` says how many tool uses were kept. `COMPACTOR_NATIVE_CLEARING=exact` is the
vendor's per-turn rule."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from tests.billing import BillingUpstream, SimulatedClock
from tests.billing.prefixes import extends
from tests.integration.live_server import live_service
from tests.integration.proxy.coding_agent import CodingAgent, ToolCalls

CLAUDE = "claude-sonnet-4-5-20250929"
KEEP = 3
EDIT = {
    "type": "clear_tool_uses_20250919",
    "trigger": {"type": "input_tokens", "value": 6_000},
    "keep": {"type": "tool_uses", "value": KEEP},
}
TURNS = 40


def replay(tmp_path: Path, clearing: str) -> tuple[BillingUpstream, list[dict[str, Any]]]:
    """The agent's turns through the service; the fake's bills and each answer's edit."""
    clock = SimulatedClock()
    with BillingUpstream(clock, ToolCalls()) as upstream:
        models = tmp_path / "models.json"
        entry = {"context_window": 200_000, "max_output_tokens": 4096, "provider": "anthropic"}
        models.write_text(json.dumps({"models": {CLAUDE: entry}}))
        settings = Settings(
            database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
            upstream_anthropic_url=upstream.base_url,
            models_file=models,
            native_clearing=clearing,
        )
        edits: list[dict[str, Any]] = []
        with live_service(settings) as url:
            agent = CodingAgent(
                url,
                CLAUDE,
                {"x-compactor-mode": "native"},
                result_tokens=2_000,  # 40 turns: four steps of 20,000 tokens
                extra={"context_management": {"edits": [EDIT]}},
            )
            try:
                for answer in agent.turns(TURNS):
                    applied = answer.json().get("context_management", {}).get("applied_edits")
                    edits.extend(applied or [{}])
                    clock.advance(20)
            finally:
                agent.http.close()
        return upstream, edits


def prefix_changes(upstream: BillingUpstream) -> int:
    bodies = upstream.bodies("messages")
    return sum(1 for a, b in itertools.pairwise(bodies) if not extends("messages", a, b))


@pytest.mark.parametrize("clearing", ["stepped", "exact"])
def test_clearing_keeps_the_prefix_between_steps(tmp_path: Path, clearing: str) -> None:
    upstream, edits = replay(tmp_path, clearing)
    assert all(bill.status == 200 for bill in upstream.bills)
    cleared = [e for e in edits if e.get("type") == EDIT["type"]]
    assert cleared, "the edit applies once the context is over 6,000 tokens"
    kept = [e["kept_tool_uses"] for e in cleared]
    changes = prefix_changes(upstream)
    if clearing == "exact":
        assert kept == [KEEP] * len(kept)
        # The vendor's rule: every new tool use moves the cleared set.
        assert changes >= len(cleared) - 1
    else:
        # Between steps more than `keep` stay; the cleared set moves a few times only.
        assert min(kept) >= KEEP and max(kept) > KEEP
        assert changes <= len(cleared) // 4
