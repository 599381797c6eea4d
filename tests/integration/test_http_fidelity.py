"""/compact keeps what was pinned, says what it restored, and refuses to grow a history."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.engine.compaction.marker import SummaryMarker
from tests.conftest import BIG_OPENAI, load_json

PIN = "Releases are cut from the `release/*` branches only."


def test_pinned_facts_are_in_the_summary_and_reported_when_restored(client: TestClient) -> None:
    body = load_json(BIG_OPENAI)
    response = client.post(
        "/compact", json={**body, "force": True, "keep_recent_tokens": 8_000, "pinned": [PIN]}
    )
    assert response.status_code == 200, response.text
    out = response.json()
    assert out["strategy"] == "summarize" and out["applied"] == ["summarize"]
    assert {"kind": "pinned", "text": PIN} in out["restored_facts"]
    summary = SummaryMarker.parse(out["messages"][0]["content"])
    assert summary == out["summary"] and f"- Pinned: {PIN}" in summary
    # The pin is carried by the summary: the next compaction keeps it without restoring it.
    grown = [*out["messages"], {"role": "user", "content": "Carry on. " * 400}]
    again = client.post(
        "/compact",
        json={"messages": grown, "force": True, "keep_recent_tokens": 2_000, "pinned": [PIN]},
    ).json()
    assert again["compacted"] and PIN in again["summary"]
    assert {"kind": "pinned", "text": PIN} not in again["restored_facts"]


def test_a_summary_larger_than_what_it_replaces_is_refused(client: TestClient) -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
    ]
    response = client.post(
        "/compact", json={"messages": messages, "force": True, "keep_recent_tokens": 1}
    )
    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["title"] == "Compaction would not shrink the history"
    assert problem["type"].endswith("/compaction-ineffective")


def test_the_contract_declares_the_new_fields_and_the_409(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert "409" in spec["paths"]["/compact"]["post"]["responses"]
    schemas = spec["components"]["schemas"]
    assert {"strategy", "clear", "pinned"} <= set(schemas["CompactIn"]["properties"])
    assert {"applied", "restored_facts", "current_request", "cleared_tool_uses"} <= set(
        schemas["CompactOut"]["properties"]
    )
    assert {"compaction_ineffective", "warning"} <= set(schemas["PrepareOut"]["properties"])
    assert {"strategy", "clear", "pinned"} <= set(schemas["SessionIn"]["properties"])
