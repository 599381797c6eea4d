"""One validation for the settings /estimate and /compact share (issue 21.8): a value
/compact refuses is refused by /estimate too, though /estimate does not use it."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

MESSAGES = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("keep_recent_tokens", -5),
        ("keep_recent_tokens", 0),
        ("strategy", "shred"),
        ("thinking", "maximal"),
        ("force", "sometimes"),
        ("pinned", [""]),
        ("clear", {"keep": -1}),
        ("instructions", "x" * 20_001),
    ],
)
def test_estimate_refuses_what_compact_refuses(client: TestClient, field: str, value: Any) -> None:
    body = {"messages": MESSAGES, field: value}
    compact = client.post("/compact", json=body)
    estimate = client.post("/estimate", json=body)
    assert compact.status_code == 422, compact.text
    assert estimate.status_code == 422, (field, value, estimate.text)
    assert estimate.headers["content-type"] == "application/problem+json"
    assert estimate.json()["errors"] == compact.json()["errors"]


def test_estimate_still_accepts_and_ignores_valid_compaction_settings(client: TestClient) -> None:
    plain = client.post("/estimate", json={"messages": MESSAGES}).json()
    body = {
        "messages": MESSAGES,
        "keep_recent_tokens": 2000,
        "strategy": "auto",
        "force": True,
        "thinking": {"type": "enabled", "budget_tokens": 1024},  # Anthropic's own, forwarded
        "pinned": ["port 5433"],
        "clear": {"keep": 1},
        "instructions": "keep the plan",
    }
    answer = client.post("/estimate", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json() == plain


def test_the_cli_estimate_refuses_them_too(tmp_path: Any) -> None:
    import json

    from typer.testing import CliRunner

    from app.cli import app

    path = tmp_path / "body.json"
    path.write_text(json.dumps({"messages": MESSAGES, "keep_recent_tokens": -5}))
    result = CliRunner().invoke(app, ["estimate", str(path)])
    assert result.exit_code != 0
