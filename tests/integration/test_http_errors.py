"""Bad input gets a clear 4xx problem+json, never a 5xx."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

PROBLEM = "application/problem+json"


def _assert_problem(response: Any, status: int, *fragments: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["title"] and body["type"]
    for fragment in fragments:
        assert fragment in body["detail"], body["detail"]
    return body


def test_malformed_json_is_400(client: TestClient) -> None:
    response = client.post(
        "/estimate", content=b'{"messages": [', headers={"content-type": "application/json"}
    )
    _assert_problem(response, 400, "not valid JSON")


def test_body_over_the_limit_is_413_before_parsing(tmp_path: Any) -> None:
    with TestClient(create_app(Settings(max_body_bytes=1_000))) as small:
        response = small.post("/estimate", content=b"x" * 2_000)
        _assert_problem(response, 413, "larger than 1000 bytes")


def test_body_over_the_limit_without_content_length_is_413() -> None:
    def chunks() -> Any:
        for _ in range(10):
            yield b"x" * 500

    with TestClient(create_app(Settings(max_body_bytes=1_000))) as small:
        response = small.post("/estimate", content=chunks())
        _assert_problem(response, 413)


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        ({}, ("messages",)),
        ({"messages": "hi"}, ("messages",)),
        ({"messages": [{"role": "wizard", "content": "x"}]}, ("unknown role 'wizard'",)),
        ({"messages": [{"role": "user", "content": 42}]}, ("messages[0].content",)),
        ({"messages": [], "context_window": -5}, ("context_window",)),
        ({"messages": [], "tokenizer": "gpt2"}, ("tokenizer",)),
        ({"messages": [], "format": "mistral"}, ("format",)),
        ({"messages": [], "usage": [{"message_index": -1}]}, ("usage.0.message_index",)),
        (
            {"messages": [{"role": "user", "content": [{"type": "tool_use", "name": "x"}]}]},
            ("messages[0].content[0].id",),
        ),
        ({"messages": [{"role": "tool", "content": "x"}]}, ("tool_call_id",)),
    ],
)
def test_schema_and_history_violations_are_422_with_what_to_fix(
    client: TestClient, body: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    for path in ("/estimate", "/compact"):
        _assert_problem(client.post(path, json=body), 422, *fragments)


def test_a_json_array_body_is_422(client: TestClient) -> None:
    _assert_problem(client.post("/estimate", json=[1, 2]), 422)


def test_invalid_utf8_is_400(client: TestClient) -> None:
    response = client.post(
        "/estimate", content=b'{"messages": ["\xff"]}', headers={"content-type": "application/json"}
    )
    assert response.status_code in (400, 422)
    assert response.headers["content-type"].startswith(PROBLEM)


def test_unknown_route_is_problem_json(client: TestClient) -> None:
    _assert_problem(client.get("/nope"), 404)


def test_health_and_ready(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready"
    assert set(ready["tokenizers"]) == {"o200k_base", "cl100k_base"}
