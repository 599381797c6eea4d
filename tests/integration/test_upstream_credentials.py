"""Credentials configured in an upstream URL never reach a caller: a failed forward says
the upstream failed without quoting its URL."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry


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
