"""Tool schemas outside what OpenAI's rendering rule covers (odd `type` values, non-string
`required` names) are counted as estimates, never refused or answered 500."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient


@pytest.mark.parametrize(
    "prop",
    [{"type": {}}, {"type": [{}]}, {"type": [[]]}, {"type": ["string", {}]}],
)
def test_odd_tool_schemas_are_counted_as_estimates(client: TestClient, prop: Any) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {"type": "object", "properties": {"x": prop}},
        },
    }
    body = {"messages": [{"role": "user", "content": "hi"}], "tools": [tool], "model": "gpt-4o"}
    response = client.post("/estimate", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["exact"] is False


def test_non_string_required_names_are_counted_as_estimates(client: TestClient) -> None:
    parameters = {"type": "object", "properties": {"x": {"type": "string"}}, "required": [{}]}
    tool = {"type": "function", "function": {"name": "f", "parameters": parameters}}
    body = {"messages": [{"role": "user", "content": "hi"}], "tools": [tool], "model": "gpt-4o"}
    response = client.post("/estimate", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["exact"] is False
