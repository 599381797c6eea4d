"""Upstream URLs written either way — with or without `/v1` — reach the same API paths
(issue 26.3: `COMPACTOR_UPSTREAM_ANTHROPIC_URL=http://host:port/v1` forwarded to
`/v1/v1/messages`). The normalized form is computed once in the settings and logged at
start."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry
from tests.integration.fake_upstreams import FakeUpstream

CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {"model": "claude-sonnet-4-5", "max_tokens": 64, **{"messages": CHAT["messages"]}}


@pytest.mark.parametrize("written", ["", "/", "/v1", "/v1/"])
def test_either_form_of_each_upstream_reaches_the_api_paths(
    tmp_path: Path, tokenizers: TokenizerRegistry, upstream: FakeUpstream, written: str
) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'c.db'}",
        upstream_openai_url=upstream.base_url + written,
        upstream_anthropic_url=upstream.base_url + written,
    )
    with TestClient(create_app(settings, tokenizers=tokenizers)) as client:
        chat = client.post("/v1/chat/completions", json=CHAT)
        messages = client.post("/v1/messages", json=MESSAGES)
        models = client.get("/v1/models")
    assert (chat.status_code, messages.status_code, models.status_code) == (200, 200, 200)
    assert [r.path for r in upstream.received] == [
        "/v1/chat/completions",
        "/v1/messages",
        "/v1/models",
    ]


@pytest.mark.parametrize(
    ("openai_url", "base", "root"),
    [
        ("https://api.openai.com", "https://api.openai.com/v1", "https://api.openai.com"),
        ("https://api.openai.com/v1/", "https://api.openai.com/v1", "https://api.openai.com"),
        (
            "https://openrouter.ai/api/v1",
            "https://openrouter.ai/api/v1",
            "https://openrouter.ai/api",
        ),
        # A base with a version path of its own is the SDK's base_url as given.
        (
            "https://generativelanguage.googleapis.com/v1beta/openai",
            "https://generativelanguage.googleapis.com/v1beta/openai",
            "https://generativelanguage.googleapis.com/v1beta/openai",
        ),
    ],
)
def test_the_normalized_openai_upstream(openai_url: str, base: str, root: str) -> None:
    settings = Settings(upstream_openai_url=openai_url)
    assert (settings.upstream_openai_base, settings.upstream_openai_root) == (base, root)


@pytest.mark.parametrize("written", ["http://gw:4000", "http://gw:4000/", "http://gw:4000/v1"])
def test_the_normalized_anthropic_upstream(written: str) -> None:
    assert Settings(upstream_anthropic_url=written).upstream_anthropic_root == "http://gw:4000"


def test_where_requests_go_is_logged_at_start(
    tmp_path: Path,
    tokenizers: TokenizerRegistry,
    upstream: FakeUpstream,
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = upstream.base_url.rsplit(":", 1)[1]
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'c.db'}",
        upstream_anthropic_url=f"http://user:secret@127.0.0.1:{port}/v1",
    )
    with (
        caplog.at_level(logging.INFO, logger="compactor.startup"),
        TestClient(create_app(settings, tokenizers=tokenizers)),
    ):
        pass
    lines = [r.getMessage() for r in caplog.records if "proxy upstream" in r.getMessage()]
    assert len(lines) == 1
    assert "COMPACTOR_UPSTREAM_ANTHROPIC_URL" in lines[0]
    assert f"{upstream.base_url}/v1/messages" in lines[0] and "secret" not in lines[0]
