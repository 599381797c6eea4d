"""COMPACTOR_MODELS_FROM_UPSTREAM: context windows read from the upstream's model list, in
the shapes OpenRouter (`GET /v1/models`, `context_length`) and LiteLLM (`GET /model/info`,
`model_info.max_input_tokens`) publish, from a real HTTP server on loopback; cached,
refreshed, and a failure is logged, never fatal (issue 26.1)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.providers import model_lists
from app.providers.model_lists import LiteLLMModelInfo, ModelListError, OpenAIModelList
from app.registry import load_registry
from app.services.model_catalog import ModelCatalog, UpstreamModelWindows
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry
from tests.integration.loopback_server import LoopbackServer

KEY = "sk-models-test"


def openrouter_list(window: int = 1_000_000) -> dict[str, Any]:
    """OpenRouter's shape (trimmed): id, context_length and top_provider per model."""
    return {
        "data": [
            {
                "id": "anthropic/claude-sonnet-4.5",
                "name": "Anthropic: Claude Sonnet 4.5",
                "context_length": window,
                "pricing": {"prompt": "0.000003", "completion": "0.000015"},
                "top_provider": {"context_length": window, "max_completion_tokens": 64_000},
            },
            {"id": "acme/house-model", "context_length": 65_536, "top_provider": {}},
            {"id": "openai/gpt-4o", "context_length": None},
        ]
    }


def litellm_info() -> dict[str, Any]:
    """LiteLLM's /model/info shape (trimmed): the alias, its model and its limits."""
    return {
        "data": [
            {
                "model_name": "team-big",
                "litellm_params": {"model": "anthropic/claude-sonnet-4-6"},
                "model_info": {"max_input_tokens": 1_000_000, "max_output_tokens": 64_000},
            },
            {
                "model_name": "team-small",
                "litellm_params": {"model": "openai/gpt-4o-mini"},
                "model_info": {"max_input_tokens": None},
            },
        ]
    }


class ModelListUpstream(LoopbackServer):
    """Answers GET /v1/models and GET /model/info with scripted JSON or a status."""

    def __init__(self) -> None:
        self.answers: dict[str, tuple[int, Any]] = {
            "/v1/models": (200, openrouter_list()),
            "/model/info": (200, litellm_info()),
        }
        self.seen: list[tuple[str, str | None]] = []
        self.read = threading.Condition()
        super().__init__(_handler(self))

    def wait_for_reads(self, path: str, count: int) -> None:
        with self.read:
            done = self.read.wait_for(
                lambda: sum(1 for p, _ in self.seen if p == path) >= count, timeout=30
            )
        assert done, f"{path} was read fewer than {count} times: {self.seen}"


def _handler(fake: ModelListUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with fake.read:
                fake.seen.append((self.path, self.headers.get("authorization")))
                fake.read.notify_all()
            status, body = fake.answers.get(self.path, (404, {"error": "not found"}))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


@pytest.fixture
def upstream() -> Iterator[ModelListUpstream]:
    with ModelListUpstream() as fake:
        yield fake


def _app(tmp_path: Path, tokenizers: TokenizerRegistry, url: str) -> TestClient:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'c.db'}",
        upstream_openai_url=url,
        models_from_upstream=True,
        upstream_models_api_key=KEY,
    )
    return TestClient(create_app(settings, tokenizers=tokenizers))


def _window(client: TestClient, model: str) -> tuple[int, str, bool]:
    answer = client.post(
        "/estimate", json={"model": model, "messages": [{"role": "user", "content": "hi"}]}
    ).json()
    return answer["context_window"], answer["context_window_source"], answer["model_known"]


def test_the_upstreams_windows_are_used_at_start(
    tmp_path: Path, tokenizers: TokenizerRegistry, upstream: ModelListUpstream
) -> None:
    with _app(tmp_path, tokenizers, f"{upstream.base_url}/v1") as client:
        assert _window(client, "anthropic/claude-sonnet-4.5") == (1_000_000, "upstream", True)
        assert _window(client, "acme/house-model") == (65_536, "upstream", True)
        # LiteLLM aliases: the published window, or the window of the model they stand for.
        assert _window(client, "team-big") == (1_000_000, "upstream", True)
        assert _window(client, "team-small") == (128_000, "alias", True)
        assert _window(client, "openai/gpt-4o") == (128_000, "alias", True)
        assert _window(client, "not-listed") == (128_000, "fallback", False)
    assert ("/v1/models", f"Bearer {KEY}") in upstream.seen
    assert ("/model/info", f"Bearer {KEY}") in upstream.seen


def test_a_failing_model_list_is_logged_and_never_fatal(
    tmp_path: Path,
    tokenizers: TokenizerRegistry,
    upstream: ModelListUpstream,
    caplog: pytest.LogCaptureFixture,
) -> None:
    upstream.answers = {"/v1/models": (500, {"error": "boom"}), "/model/info": (401, {})}
    with (
        caplog.at_level(logging.WARNING, logger="compactor.models"),
        _app(tmp_path, tokenizers, f"{upstream.base_url}/v1") as client,
    ):
        assert client.get("/readyz").status_code == 200
        assert _window(client, "acme/house-model") == (128_000, "fallback", False)
    failures = [r.getMessage() for r in caplog.records if "could not read" in r.getMessage()]
    assert any("/v1/models: it answered 500" in line for line in failures), failures
    assert any("401; set COMPACTOR_UPSTREAM_MODELS_API_KEY" in line for line in failures)


def test_an_unreachable_upstream_does_not_stop_the_start(
    tmp_path: Path, tokenizers: TokenizerRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="compactor.models"),
        _app(tmp_path, tokenizers, "http://127.0.0.1:9/v1") as client,
    ):
        assert _window(client, "gpt-4o") == (128_000, "registry", True)
    assert any("unreachable" in r.getMessage() for r in caplog.records)


async def _refreshes(upstream: ModelListUpstream) -> None:
    catalog = ModelCatalog(load_registry())
    async with httpx.AsyncClient() as client:
        windows = UpstreamModelWindows(
            catalog,
            [
                OpenAIModelList(client, f"{upstream.base_url}/v1/models", None),
                LiteLLMModelInfo(client, f"{upstream.base_url}/model/info", None),
            ],
            refresh_seconds=0.05,
        )
        assert await windows.refresh() == 5
        assert catalog.resolve("anthropic/claude-sonnet-4.5").context_window == 1_000_000
        # A later read picks up a change.
        upstream.answers["/v1/models"] = (200, openrouter_list(window=400_000))
        await windows.refresh()
        assert catalog.resolve("anthropic/claude-sonnet-4.5").context_window == 400_000
        # A failed read keeps what the source gave last; the other source still counts.
        upstream.answers["/v1/models"] = (503, {})
        upstream.answers["/model/info"] = (200, {"data": []})
        await windows.refresh()
        assert catalog.resolve("anthropic/claude-sonnet-4.5").context_window == 400_000
        assert catalog.resolve("team-big").context_window is None
        # In the background: read again every refresh_seconds until cancelled.
        before = sum(1 for path, _ in upstream.seen if path == "/model/info")
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(windows.run)
            await anyio.to_thread.run_sync(upstream.wait_for_reads, "/model/info", before + 2)
            tasks.cancel_scope.cancel()


def test_model_lists_are_cached_and_refreshed(upstream: ModelListUpstream) -> None:
    anyio.run(_refreshes, upstream)


async def _read(url: str) -> Any:
    async with httpx.AsyncClient() as client:
        return await OpenAIModelList(client, url, None).fetch()


def test_a_model_list_over_the_size_bound_is_refused(
    upstream: ModelListUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_lists, "MAX_LIST_BYTES", 100)
    with pytest.raises(ModelListError, match="over 100 bytes"):
        anyio.run(_read, f"{upstream.base_url}/v1/models")


def test_a_list_that_is_not_a_model_list_says_so(upstream: ModelListUpstream) -> None:
    upstream.answers["/v1/models"] = (200, {"models": "nope"})
    with pytest.raises(ModelListError, match="not an OpenAI-style model list"):
        anyio.run(_read, f"{upstream.base_url}/v1/models")
    # A server without such a list (404) publishes nothing, which is not an error.
    assert anyio.run(_read, f"{upstream.base_url}/v1/nothing-here") == []
