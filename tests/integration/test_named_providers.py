"""Named providers chosen by configuration only (COMPACTOR_SUMMARIZER=azure|ollama|…):
what each sends to a fake provider that is a real HTTP server on loopback, and which
configurations refuse to start."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from typer.testing import CliRunner

from app.cli import app as cli
from app.composition import SummarizerConfigError, http_summarizer_config
from app.main import create_app
from app.providers import PROVIDERS
from app.settings import Settings
from tests.conftest import CLAUDE_CODE, load_json
from tests.integration.fake_providers import DEFAULT_SUMMARY, AnthropicFake, OpenAIFake

KEY = "sk-test-NAMED-provider-key-77d1"


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


def compact_body() -> dict[str, Any]:
    body: dict[str, Any] = load_json(CLAUDE_CODE / "tool_heavy.openai.json")
    return {**body, "force": True, "keep_recent_tokens": 1_500}


def compact_with(tmp_path: Path, **summarizer: Any) -> dict[str, Any]:
    """One /compact through an app configured (from settings only) with `summarizer`."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'compactor.db'}", **summarizer)
    with TestClient(create_app(settings)) as client:
        response = client.post("/compact", json=compact_body())
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def test_azure_sends_api_key_header_api_version_and_deployment_path(
    fake: OpenAIFake, tmp_path: Path
) -> None:
    out = compact_with(
        tmp_path,
        summarizer="azure",
        # As the portal shows the resource endpoint, trailing slash included.
        summarizer_base_url=f"{fake.base_url}/",
        summarizer_model="gpt-4o",
        summarizer_deployment="compactor-gpt4o",
        summarizer_api_key=KEY,
    )
    (call,) = fake.received
    assert (
        call.path == "/openai/deployments/compactor-gpt4o/chat/completions?api-version=2024-10-21"
    )
    assert call.headers["api-key"] == KEY
    assert "authorization" not in call.headers
    assert call.body["model"] == "gpt-4o"
    assert out["summarizer"]["provider"] == "azure"
    assert out["summarizer"]["model"] == "gpt-4o"
    # The registry still knows the model behind the deployment: its output cap applies.
    assert call.body["max_tokens"] == 16_384


def test_azure_api_version_and_default_deployment_come_from_settings(
    fake: OpenAIFake, tmp_path: Path
) -> None:
    compact_with(
        tmp_path,
        summarizer="azure",
        summarizer_base_url=f"{fake.base_url}/openai",
        summarizer_model="gpt-4o-mini",
        summarizer_api_version="2025-01-01-preview",
        summarizer_api_key=KEY,
    )
    (call,) = fake.received
    assert call.path == (
        "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2025-01-01-preview"
    )


def test_ollama_needs_no_key_and_sends_none(fake: OpenAIFake, tmp_path: Path) -> None:
    out = compact_with(
        tmp_path,
        summarizer="ollama",
        summarizer_base_url=f"{fake.base_url}/v1",
        summarizer_model="qwen3:8b",
    )
    (call,) = fake.received
    assert call.path == "/v1/chat/completions"
    assert not {"authorization", "api-key", "x-api-key"} & set(call.headers)
    assert call.body["model"] == "qwen3:8b"
    assert out["summarizer"]["provider"] == "ollama"


def test_vllm_with_a_key_sends_it_as_bearer(fake: OpenAIFake, tmp_path: Path) -> None:
    compact_with(
        tmp_path,
        summarizer="vllm",
        summarizer_base_url=f"{fake.base_url}/v1",
        summarizer_model="Qwen/Qwen3-8B",
        summarizer_api_key=KEY,
    )
    (call,) = fake.received
    assert call.path == "/v1/chat/completions"
    assert call.headers["authorization"] == f"Bearer {KEY}"


def test_openrouter_sends_bearer_and_its_attribution_header(
    fake: OpenAIFake, tmp_path: Path
) -> None:
    compact_with(
        tmp_path,
        summarizer="openrouter",
        summarizer_base_url=f"{fake.base_url}/api/v1",
        summarizer_model="anthropic/claude-sonnet-4.5",
        summarizer_api_key=KEY,
    )
    (call,) = fake.received
    assert call.path == "/api/v1/chat/completions"
    assert call.headers["authorization"] == f"Bearer {KEY}"
    assert call.headers["x-title"] == "context-compactor"


def test_openai_compatible_is_the_generic_endpoint(fake: OpenAIFake, tmp_path: Path) -> None:
    compact_with(
        tmp_path,
        summarizer="openai-compatible",
        summarizer_base_url=f"{fake.base_url}/gateway/v1",
        summarizer_model="some-local-model",
    )
    (call,) = fake.received
    assert call.path == "/gateway/v1/chat/completions"
    assert "authorization" not in call.headers


def test_anthropic_keeps_its_own_headers(tmp_path: Path) -> None:
    with AnthropicFake() as fake:
        compact_with(
            tmp_path,
            summarizer="anthropic",
            summarizer_base_url=fake.base_url,
            summarizer_model="claude-sonnet-4-5",
            summarizer_api_key=KEY,
        )
    (call,) = fake.received
    assert call.path == "/v1/messages"
    assert call.headers["x-api-key"] == KEY
    assert call.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in call.headers


@pytest.mark.parametrize(
    ("name", "base_url"),
    [
        ("openai", "https://api.openai.com/v1"),
        ("openrouter", "https://openrouter.ai/api/v1"),
        ("ollama", "http://localhost:11434/v1"),
        ("anthropic", "https://api.anthropic.com"),
    ],
)
def test_named_providers_have_their_default_base_url(name: str, base_url: str) -> None:
    settings = Settings(summarizer=name, summarizer_model="m", summarizer_api_key=KEY)
    assert http_summarizer_config(settings).provider.base_url == base_url


@pytest.mark.parametrize(
    ("summarizer", "fragment"),
    [
        # No default server: where it is must be configured.
        ({"summarizer": "azure", "summarizer_api_key": KEY}, "COMPACTOR_SUMMARIZER_BASE_URL"),
        ({"summarizer": "openai-compatible"}, "COMPACTOR_SUMMARIZER_BASE_URL"),
        # vLLM's default port is the service's own: no localhost:8000 default (issue 26.2).
        ({"summarizer": "vllm"}, "vLLM's default port, 8000, is also this service's"),
        # Azure always needs its key; the hosted APIs need one at their own address.
        (
            {"summarizer": "azure", "summarizer_base_url": "https://r.openai.azure.com"},
            "COMPACTOR_SUMMARIZER_API_KEY",
        ),
        ({"summarizer": "openrouter"}, "COMPACTOR_SUMMARIZER_API_KEY"),
        ({"summarizer": "openai"}, "COMPACTOR_SUMMARIZER_API_KEY"),
        (
            {"summarizer": "ollama", "summarizer_base_url": "localhost:11434"},
            "http(s) URL",
        ),
    ],
)
def test_unusable_provider_settings_refuse_to_start(
    summarizer: dict[str, Any], fragment: str
) -> None:
    settings = Settings(summarizer_model="gpt-4o", **summarizer)
    with pytest.raises(SummarizerConfigError, match=re.escape(fragment)):
        create_app(settings)


def test_provider_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPACTOR_SUMMARIZER", "azure")
    monkeypatch.setenv("COMPACTOR_SUMMARIZER_DEPLOYMENT", "prod-4o")
    monkeypatch.setenv("COMPACTOR_SUMMARIZER_API_VERSION", "2024-06-01")
    settings = Settings()
    assert (settings.summarizer, settings.summarizer_deployment) == ("azure", "prod-4o")
    assert settings.summarizer_api_version == "2024-06-01"


def test_an_unknown_provider_name_is_refused_with_the_choices() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(summarizer="azure-openai")
    message = str(caught.value)
    # In plain words (issue 26.3), not the union's internals.
    assert "choose one of: " + ", ".join(("extractive", *PROVIDERS)) in message
    assert "literal_error" not in message and "Input should be" not in message


def test_cli_compact_uses_the_configured_provider(
    fake: OpenAIFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "COMPACTOR_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
        "COMPACTOR_SUMMARIZER": "ollama",
        "COMPACTOR_SUMMARIZER_BASE_URL": f"{fake.base_url}/v1",
        "COMPACTOR_SUMMARIZER_MODEL": "qwen3:8b",
    }.items():
        monkeypatch.setenv(name, value)
    source = tmp_path / "history.json"
    source.write_text(json.dumps(compact_body()), encoding="utf-8")
    result = CliRunner().invoke(cli, ["compact", str(source)])
    assert result.exit_code == 0, result.output
    (call,) = fake.received
    assert call.path == "/v1/chat/completions" and call.body["model"] == "qwen3:8b"
    answer = json.loads(result.stdout)
    assert answer["summarizer"]["provider"] == "ollama"
    assert answer["summary"].startswith(DEFAULT_SUMMARY.split("\n", 1)[0])


def test_cli_compact_with_unusable_settings_says_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPACTOR_SUMMARIZER", "azure")
    monkeypatch.setenv("COMPACTOR_SUMMARIZER_MODEL", "gpt-4o")
    source = tmp_path / "history.json"
    source.write_text(json.dumps(compact_body()), encoding="utf-8")
    result = CliRunner().invoke(cli, ["compact", str(source)])
    assert result.exit_code == 2
    assert "COMPACTOR_SUMMARIZER_BASE_URL" in result.output
