"""Fixtures of the proxy tests: a fake upstream, the service in front of it under a real
server, and SDK clients pointed at the service (closed after each test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from tests.integration.fake_upstreams import FakeUpstream
from tests.integration.live_server import live_service
from tests.integration.proxy.clients import close_clients


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as fake:
        yield fake


def proxy_settings(tmp_path: Path, upstream: FakeUpstream, **overrides: Any) -> Settings:
    """The service in front of `upstream`, configured from settings only."""
    return Settings(
        database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
        upstream_openai_url=f"{upstream.base_url}/v1",
        upstream_anthropic_url=upstream.base_url,
        upstream_gemini_url=upstream.base_url,
        **overrides,
    )


@pytest.fixture
def proxy_url(tmp_path: Path, upstream: FakeUpstream) -> Iterator[str]:
    with live_service(proxy_settings(tmp_path, upstream)) as url:
        yield url


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    close_clients()
