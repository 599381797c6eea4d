"""The `Host` allow-list (issue 21.7): a DNS-rebinding page names its own host, which a
local service must refuse before answering anything, over real HTTP on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.live_server import live_server


@pytest.fixture
def local(tmp_path: Path) -> Iterator[str]:
    """The service as a developer runs it: loopback, no keys, default hosts."""
    with live_server(Settings(database_url=f"sqlite:///{tmp_path / 'hosts.db'}")) as url:
        yield url


def _port(url: str) -> int:
    return httpx.URL(url).port or 80


def test_a_rebinding_host_reads_nothing(local: str) -> None:
    for path in ("/sessions", "/ui", "/healthz", "/metrics", "/v1/models"):
        answer = httpx.get(f"{local}{path}", headers={"Host": "attacker.example"})
        assert answer.status_code == 400, (path, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"
        problem = answer.json()
        assert problem["type"].endswith("/host-not-allowed")
        assert "attacker.example" in problem["detail"]
        assert "COMPACTOR_ALLOWED_HOSTS" in problem["detail"]
        assert answer.headers["x-request-id"]
    sent = httpx.post(
        f"{local}/sessions", json={}, headers={"Host": f"attacker.example:{_port(local)}"}
    )
    assert sent.status_code == 400
    # Nothing was written either.
    assert httpx.get(f"{local}/sessions").json()["total"] == 0


def test_loopback_names_and_the_bound_address_are_allowed(local: str) -> None:
    port = _port(local)
    for host in (
        f"127.0.0.1:{port}",
        f"localhost:{port}",
        "localhost",
        "LOCALHOST.",
        f"[::1]:{port}",
        "127.0.0.1",
    ):
        answer = httpx.get(f"{local}/sessions", headers={"Host": host})
        assert answer.status_code == 200, (host, answer.text)


@pytest.mark.parametrize(
    "host",
    [
        "localhost.attacker.example",
        "127.0.0.1.nip.io",
        "attacker.example#@localhost",
        "localhost:80@attacker.example",
        "[::1",
        "",
    ],
)
def test_look_alike_and_malformed_hosts_are_refused(local: str, host: str) -> None:
    answer = httpx.get(f"{local}/sessions", headers={"Host": host})
    assert answer.status_code == 400, (host, answer.text)


def test_configured_names_are_allowed_too(tmp_path: Path) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'hosts.db'}",
        allowed_hosts="compactor.internal, *.svc.cluster.local",
    )
    with live_server(settings) as url:
        for host in ("compactor.internal:8000", "compactor.prod.svc.cluster.local", "localhost"):
            assert httpx.get(f"{url}/healthz", headers={"Host": host}).status_code == 200, host
        for host in ("attacker.example", "svc.cluster.local.attacker.example"):
            assert httpx.get(f"{url}/healthz", headers={"Host": host}).status_code == 400, host


def test_a_star_allows_every_host(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'hosts.db'}", allowed_hosts="*")
    with live_server(settings) as url:
        answer = httpx.get(f"{url}/healthz", headers={"Host": "compactor"})
        assert answer.status_code == 200


def test_the_asgi_test_client_is_its_own_bound_address(tmp_path: Path) -> None:
    """TestClient serves as `testserver`, the address it connects to; another name is
    refused there too, so the default is the same under test as in production."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'hosts.db'}")
    with TestClient(create_app(settings)) as client:
        assert client.get("/healthz").status_code == 200
        refused = client.get("/healthz", headers={"Host": "attacker.example"})
        assert refused.status_code == 400


def test_a_bad_host_setting_refuses_to_start(tmp_path: Path) -> None:
    for bad in ("http://compactor.internal", "compactor.internal/path", "*.", "a b"):
        with pytest.raises(ValueError, match="COMPACTOR_ALLOWED_HOSTS"):
            Settings(database_url=f"sqlite:///{tmp_path / 'hosts.db'}", allowed_hosts=bad)
