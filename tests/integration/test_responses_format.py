"""The `responses` wire format (OpenAI Responses `input` items) through the whole service:
/estimate, /compact and sessions, on a real tool-using transcript converted to items
(tests/data/to_responses.py)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.formats.registry import FORMATS
from tests.conftest import CLAUDE_CODE, load_json

BIG = CLAUDE_CODE / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.responses.json"
SMALL = CLAUDE_CODE / "tool_heavy.responses.json"


def pairs_intact(items: list[dict[str, Any]]) -> bool:
    """Every `*_output` item follows the call with its `call_id`."""
    calls: set[str] = set()
    for item in items:
        kind = item.get("type", "")
        if kind.endswith("_call") and "call_id" in item:
            calls.add(item["call_id"])
        if kind.endswith("_output") and item["call_id"] not in calls:
            return False
    return True


def test_items_are_detected_as_the_responses_format() -> None:
    assert FORMATS.detect(load_json(BIG)["input"]).name == "responses"
    # Plain role/content items read the same in every format: the default decides.
    assert FORMATS.detect([{"role": "user", "content": "hi"}]).name == "openai"


def test_estimate_counts_every_item_and_is_never_exact(client: TestClient) -> None:
    body = load_json(BIG)
    out = client.post(
        "/estimate", json={"messages": body["input"], "model": "gpt-5", "system": "Be brief."}
    ).json()
    assert len(out["per_message"]) == len(body["input"])
    assert all(count > 0 for count in out["per_message"])
    assert out["breakdown"]["system"] > 0
    # Responses framing is not published: the count is honest about being an estimate.
    assert out["exact"] is False


@pytest.mark.parametrize("keep", [2_000, 8_000, 30_000])
def test_compact_keeps_pairs_and_reasoning_with_what_follows(client: TestClient, keep: int) -> None:
    items = load_json(BIG)["input"]
    response = client.post(
        "/compact",
        json={"messages": items, "model": "gpt-5", "force": True, "keep_recent_tokens": keep},
    )
    assert response.status_code == 200, response.text
    out = response.json()
    assert out["compacted"] and out["format"] == "responses"
    cut = out["cut_index"]
    new = out["messages"]
    assert new[0]["type"] == "message" and new[0]["role"] == "user"
    assert new[0]["content"].startswith(SUMMARY_MARKER_PREFIX)
    # The kept tail is the very same items, every unknown field (ids, status, annotations)
    # included, and no call is separated from its output.
    assert new[1:] == items[cut:]
    assert pairs_intact(new)
    # A reasoning item is never left behind in the summary while what it led to is kept.
    assert items[cut - 1]["type"] != "reasoning"
    assert out["tokens_after"] < out["tokens_before"]


def test_a_compacted_history_takes_the_update_path(client: TestClient) -> None:
    items = load_json(BIG)["input"]
    first = client.post(
        "/compact", json={"messages": items, "force": True, "keep_recent_tokens": 20_000}
    ).json()
    grown = [*first["messages"], {"role": "user", "content": "Now also update the README."}]
    second = client.post(
        "/compact", json={"messages": grown, "force": True, "keep_recent_tokens": 2_000}
    ).json()
    assert second["compacted"], second["reason"]
    assert second["updated_previous_summary"] is True
    assert (
        sum(
            1
            for m in second["messages"]
            if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_MARKER_PREFIX)
        )
        == 1
    )


def test_unknown_items_and_builtin_tool_pairs_survive(client: TestClient) -> None:
    unknown = {"kind_of_thing": "vendor extension", "payload": {"x": [1, 2, 3]}}
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "developer", "content": "Follow the repo rules."},
        {"role": "user", "content": "Patch the parser. " * 400},
        unknown,
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** x"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "done " * 500},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA" * 50},
        {"type": "function_call", "call_id": "c2", "name": "run", "arguments": '{"cmd":"x"}'},
        {
            "type": "function_call_output",
            "call_id": "c2",
            "output": [{"type": "input_text", "text": "ok " * 300}],
        },
        {"role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
        {"role": "user", "content": "Thanks, now the tests."},
    ]
    estimate = client.post("/estimate", json={"messages": items, "format": "responses"}).json()
    assert estimate["per_message"][2] > 0  # the unknown item is counted as text
    assert estimate["breakdown"]["system"] == estimate["per_message"][0]
    out = client.post(
        "/compact",
        json={"messages": items, "format": "responses", "force": True, "keep_recent_tokens": 10},
    ).json()
    assert out["compacted"], out["reason"]
    assert out["messages"][0] == items[0]  # the developer message is the system prompt
    assert pairs_intact(out["messages"])
    assert out["messages"][2:] == items[out["cut_index"] :]


def test_clearing_replaces_outputs_in_their_shape(client: TestClient) -> None:
    items = load_json(BIG)["input"]
    out = client.post(
        "/compact",
        json={
            "messages": items,
            "strategy": "clear_tool_results",
            "force": True,
            "clear": {"keep": 3},
        },
    ).json()
    assert out["compacted"] and out["applied"] == ["clear_tool_results"]
    cleared_ids = {c["tool_call_id"] for c in out["cleared_tool_uses"]}
    assert cleared_ids
    for before, after in zip(items, out["messages"], strict=True):
        if before.get("type") == "function_call_output" and before["call_id"] in cleared_ids:
            assert after["output"].startswith("[tool result cleared")
            assert {k: v for k, v in after.items() if k != "output"} == {
                k: v for k, v in before.items() if k != "output"
            }
        else:
            assert after == before


def test_invalid_items_say_what_to_fix(client: TestClient) -> None:
    bad = client.post(
        "/estimate",
        json={"format": "responses", "messages": [{"type": "function_call", "name": "x"}]},
    )
    assert bad.status_code == 422
    assert "messages[0].call_id" in bad.json()["detail"]
    role = client.post(
        "/estimate", json={"format": "responses", "messages": [{"role": "tool", "content": "x"}]}
    )
    assert role.status_code == 422 and "function_call_output" in role.json()["detail"]


def test_a_session_in_the_responses_format(client: TestClient) -> None:
    items = load_json(SMALL)["input"]
    sid = client.post(
        "/sessions",
        json={
            "format": "responses",
            "model": "gpt-5",
            "trigger_tokens": 1_500,
            "keep_recent_tokens": 500,
        },
    ).json()["id"]
    assert client.post(f"/sessions/{sid}/messages", json={"messages": items}).status_code == 200
    prepared = client.post(f"/sessions/{sid}/prepare").json()
    assert prepared["compacted"] is True
    context = prepared["context"]
    assert context["format"] == "responses"
    assert context["messages"][0]["type"] == "message"
    assert pairs_intact(context["messages"])
    transcript = client.get(f"/sessions/{sid}/transcript").json()
    assert transcript["messages"] == items  # the originals, untouched
