"""The lifespan builds the app state and owns its lifetime: outbound client, tokenizers,
readiness; a shared tokenizer registry is used as given."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from app.api.state import AppState
from app.main import create_app
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry
from tests.integration.fake_providers import OpenAIFake


def state_of(client: TestClient) -> AppState:
    state: AppState = client.app_state["compactor"]
    return state


def test_state_lives_as_long_as_the_lifespan(settings: Settings) -> None:
    with TestClient(create_app(settings)) as client:
        state = state_of(client)
        assert (
            state.ready and state.outbound is None
        )  # the extractive summarizer calls out to no one
        assert client.get("/readyz").status_code == 200
    assert not state.ready


def test_the_outbound_client_is_open_only_while_the_app_runs(tmp_path: Path) -> None:
    with OpenAIFake() as fake:
        settings = Settings(
            database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
            summarizer="ollama",
            summarizer_base_url=f"{fake.base_url}/v1",
            summarizer_model="qwen3:8b",
        )
        with TestClient(create_app(settings)) as client:
            outbound = state_of(client).outbound
            assert outbound is not None and not outbound.is_closed
            assert client.get("/readyz").json()["summarizer"] == "ollama"
        assert outbound.is_closed


def test_apps_share_a_given_tokenizer_registry(
    settings: Settings, tokenizers: TokenizerRegistry
) -> None:
    for _ in range(2):
        with TestClient(create_app(settings, tokenizers=tokenizers)) as client:
            assert state_of(client).tokenizers is tokenizers
            ready = client.get("/readyz").json()
            assert set(ready["tokenizers"]) == set(tokenizers.loaded)
            estimate = client.post(
                "/estimate", json={"messages": [{"role": "user", "content": "hi"}]}
            )
            assert estimate.status_code == 200, estimate.text
