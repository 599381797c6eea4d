"""Shared fixtures: the real transcripts, tokenizers and an app client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry

DATA = Path(__file__).parent / "data"
CLAUDE_CODE = DATA / "claude_code"
OPENHANDS = DATA / "openhands_swegym"
BIG_OPENAI = CLAUDE_CODE / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.openai.json"
BIG_ANTHROPIC = CLAUDE_CODE / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.anthropic.json"
AUTOCOMPACTED_ANTHROPIC = CLAUDE_CODE / "4d5611e5-241a-462a-8d15-5122611a9569.anthropic.json"


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def tokenizers() -> TokenizerRegistry:
    registry = TokenizerRegistry()
    registry.warm()
    return registry


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(database_url=f"sqlite:///{tmp_path / 'compactor.db'}")


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client
