"""Regressions found by review: caller input that crashed a route, and secrets that
reached an answer. Each answered 500 (or leaked) before its fix."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.services.native.signed_state import CompactionStateError, StateSigner
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry


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


@pytest.mark.parametrize("token", ["ccs1.abc.é", "ccs1.a b.c", "ccs1.\u0000.x"])
def test_a_non_ascii_compaction_state_is_refused_not_a_crash(token: str) -> None:
    with pytest.raises(CompactionStateError):
        StateSigner(b"k" * 32).open(token)


def test_a_non_ascii_compaction_item_is_a_400(client: TestClient) -> None:
    body = {
        "model": "gpt-4o",
        "input": [{"type": "compaction", "encrypted_content": "ccs1.abc.é"}],
    }
    response = client.post("/v1/responses/input_tokens", json=body)
    assert response.status_code == 400, response.text


def test_huge_inspector_pages_are_refused(client: TestClient) -> None:
    response = client.get("/ui", params={"page": 10**30})
    assert response.status_code == 422, response.text


def test_upstream_errors_do_not_quote_the_configured_url(
    tmp_path: Any, tokenizers: TokenizerRegistry
) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'c.db'}",
        upstream_openai_url="http://svcuser:s3cretpw@127.0.0.1:9/v1",
    )
    with TestClient(create_app(settings, tokenizers=tokenizers)) as client:
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        response = client.post("/v1/chat/completions", json=body)
    assert response.status_code in (502, 504), response.text
    assert "s3cretpw" not in response.text and "svcuser" not in response.text
