"""A real compactor service on a loopback port for the clients and framework integrations."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.settings import Settings
from tests.live_server import live_server


@pytest.fixture(scope="module")
def compactor_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("integrations") / "compactor.db"
    with live_server(Settings(database_url=f"sqlite:///{db}")) as url:
        yield url
