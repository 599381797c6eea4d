"""/metrics sums every tenant's traffic, so with API keys only the operator's metrics key
reads it (issue 21.8); without keys (loopback) it stays open."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

KEYS = "alpha:alpha-key-0123456789,beta:beta-key-0123456789"
METRICS_KEY = "metrics-key-0123456789"


def _get(client: TestClient, key: str | None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    answer = client.get("/metrics", headers=headers)
    return answer.status_code, answer.text


def test_a_tenant_key_does_not_read_the_metrics(tmp_path: Path) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'm.db'}", api_keys=KEYS, metrics_key=METRICS_KEY
    )
    with TestClient(create_app(settings)) as client:
        status, body = _get(client, "alpha-key-0123456789")
        assert status == 403, body
        assert "COMPACTOR_METRICS_KEY" in body and "compactor_http_requests" not in body
        assert _get(client, None)[0] == 401
        assert _get(client, "wrong-key-000000")[0] == 401
        status, body = _get(client, METRICS_KEY)
        assert status == 200 and "compactor_http_requests" in body
        # The metrics key is no tenant's key: it opens nothing else.
        sessions = client.get("/sessions", headers={"Authorization": f"Bearer {METRICS_KEY}"})
        assert sessions.status_code == 401


def test_with_keys_and_no_metrics_key_nobody_reads_them(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'm.db'}", api_keys=KEYS)
    with TestClient(create_app(settings)) as client:
        status, body = _get(client, "beta-key-0123456789")
        assert status == 403
        assert "COMPACTOR_METRICS_KEY" in body


def test_without_keys_the_metrics_stay_open(tmp_path: Path) -> None:
    with TestClient(create_app(Settings(database_url=f"sqlite:///{tmp_path / 'm.db'}"))) as client:
        assert _get(client, None)[0] == 200


def test_a_metrics_key_alone_guards_the_metrics(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'm.db'}", metrics_key=METRICS_KEY)
    with TestClient(create_app(settings)) as client:
        assert _get(client, None)[0] == 401
        assert _get(client, METRICS_KEY)[0] == 200
        assert client.get("/sessions").status_code == 200  # the rest stays open


def test_a_metrics_key_that_cannot_work_refuses_to_start(tmp_path: Path) -> None:
    for metrics_key, match in (("short", "at least"), ("alpha-key-0123456789", "tenant")):
        settings = Settings(
            database_url=f"sqlite:///{tmp_path / 'm.db'}", api_keys=KEYS, metrics_key=metrics_key
        )
        with pytest.raises(ValueError, match=match):
            create_app(settings)
