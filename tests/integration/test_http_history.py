"""/estimate and /compact over HTTP on real agent transcripts, both formats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.engine.compaction.prompts import SUMMARY_SECTIONS
from tests.conftest import (
    AUTOCOMPACTED_ANTHROPIC,
    BIG_ANTHROPIC,
    BIG_OPENAI,
    CLAUDE_CODE,
    OPENHANDS,
    load_json,
    tool_pairs_intact,
)

TRANSCRIPTS = [
    BIG_OPENAI,
    BIG_ANTHROPIC,
    AUTOCOMPACTED_ANTHROPIC,
    CLAUDE_CODE / "4d5611e5.agent-a2898e3.openai.json",
    *sorted(OPENHANDS.glob("*.json")),
]


def _summaries(messages: list[dict[str, Any]]) -> int:
    return sum(
        1
        for m in messages
        if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_MARKER_PREFIX)
    )


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: Path(p).name)
def test_compact_real_transcript_keeps_tail_verbatim_and_pairs_intact(
    client: TestClient, path: Path
) -> None:
    body = load_json(path)
    keep = 4_000
    response = client.post("/compact", json={**body, "force": True, "keep_recent_tokens": keep})
    assert response.status_code == 200, response.text
    out = response.json()
    assert out["compacted"], out["reason"]
    system_count = sum(1 for m in body["messages"][:3] if m["role"] in ("system", "developer"))
    cut = out["cut_index"]
    new = out["messages"]
    assert new[:system_count] == body["messages"][:system_count]
    assert new[system_count]["role"] == "user"
    assert new[system_count]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert "]\n\n" in new[system_count]["content"]
    assert new[system_count + 1 :] == body["messages"][cut:]
    assert out["summarized_messages"] == cut - system_count
    assert out["tokens_after"] < out["tokens_before"]
    assert out["estimate_floor"] == len(new)
    assert tool_pairs_intact(new)
    kept_tokens = client.post("/estimate", json={**body, "messages": body["messages"][cut:]})
    assert sum(kept_tokens.json()["per_message"]) >= keep
    for section in SUMMARY_SECTIONS:
        assert section in out["summary"]


@pytest.mark.parametrize("path", [BIG_OPENAI, BIG_ANTHROPIC], ids=lambda p: Path(p).name)
def test_second_compaction_updates_the_previous_summary(client: TestClient, path: Path) -> None:
    body = load_json(path)
    half = len(body["messages"]) // 2
    first = client.post(
        "/compact", json={**body, "messages": body["messages"][:half], "force": True}
    ).json()
    assert first["compacted"] and not first["updated_previous_summary"]
    grown = first["messages"] + body["messages"][half:]
    second = client.post("/compact", json={**body, "messages": grown, "force": True}).json()
    assert second["compacted"], second["reason"]
    assert second["updated_previous_summary"]
    assert _summaries(second["messages"]) == 1
    assert second["cut_index"] > 1
    assert tool_pairs_intact(second["messages"])


def test_estimate_answers_contract_fields(client: TestClient) -> None:
    body = load_json(AUTOCOMPACTED_ANTHROPIC)
    out = client.post("/estimate", json=body).json()
    for field in (
        "tokens",
        "method",
        "exact",
        "encoding",
        "breakdown",
        "per_message",
        "context_window",
        "reserve_tokens",
        "threshold",
        "should_compact",
    ):
        assert field in out
    assert len(out["per_message"]) == len(body["messages"])
    # Claude Code compacted this session at 170,251 tokens on a 200k window.
    assert out["context_window"] == 200_000 and out["threshold"] == 167_232
    assert out["should_compact"] is True
    assert out["exact"] is False and out["encoding"] == "o200k_base"


def test_estimate_uses_usage_anchor_and_floor(client: TestClient) -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    messages.append({"role": "user", "content": "more"})
    usage = [{"message_index": 1, "input_tokens": 1000, "output_tokens": 50}]
    anchored = client.post("/estimate", json={"messages": messages, "usage": usage}).json()
    assert anchored["method"] == "usage+tokenizer"
    assert anchored["tokens"] == 1050 + anchored["per_message"][2]
    floored = client.post(
        "/estimate", json={"messages": messages, "usage": usage, "estimate_floor": 2}
    ).json()
    assert floored["method"] == "tokenizer" and floored["tokens"] < 1000


def test_under_threshold_is_not_compacted_unless_forced(client: TestClient) -> None:
    body = load_json(CLAUDE_CODE / "tool_heavy.openai.json")
    out = client.post("/compact", json=body).json()
    assert out["compacted"] is False
    assert "under the threshold" in out["reason"]
    assert out["messages"] == body["messages"]


def test_nothing_to_compact_is_reported_without_a_summary(client: TestClient) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "force": True}
    out = client.post("/compact", json=body).json()
    assert out["compacted"] is False and "nothing to compact" in out["reason"]
    assert out["summary"] is None


def test_unknown_fields_survive_the_round_trip(client: TestClient) -> None:
    # Plain prose, long enough that its summary is smaller than it (the inflation guard).
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Look into the billing totals. " * 40, "x_trace": {"id": 1}},
        {
            "role": "assistant",
            "content": "The totals come from the ledger view. " * 80,
            "vendor_field": [1, 2],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "Check the tax lines too. " * 30,
                    "cache_control": {"a": 1},
                }
            ],
        },
        {"role": "assistant", "content": "done", "metadata": {"keep": True}},
    ]
    out = client.post(
        "/compact", json={"messages": messages, "force": True, "keep_recent_tokens": 150}
    ).json()
    assert out["compacted"]
    assert out["messages"][1:] == messages[out["cut_index"] :]
