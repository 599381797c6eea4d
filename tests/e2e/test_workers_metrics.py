"""`compactor serve --workers 2`: /metrics adds up both workers, so counters never go
backwards whichever worker answers the scrape."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

REQUESTS = 30


def _fresh_connections(url: str) -> httpx.Client:
    """One client (one TLS context, built once: `httpx.get` builds one per call, which on
    a loaded machine costs more than the request) that keeps no connection alive, so
    either worker may accept each request."""
    return httpx.Client(base_url=url, timeout=30, limits=httpx.Limits(max_keepalive_connections=0))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    env = {
        **os.environ,
        "COMPACTOR_DATABASE_URL": f"sqlite:///{tmp_path / 'workers.db'}",
        "TMPDIR": str(tmp_path),  # where serve makes the workers' metrics folder
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    command = [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--workers", "2"]
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(command, env=env, stdout=sink, stderr=sink, cwd=Path.cwd())
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        with _fresh_connections(url) as probe:
            while True:
                assert server.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the server did not start"
                try:
                    if probe.get("/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
        assert list(tmp_path.glob("compactor-metrics-*")), "no shared metrics folder"
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)
    assert not list(tmp_path.glob("compactor-metrics-*")), "the metrics folder was left behind"


def _healthz_count(metrics: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("compactor_http_requests_total{") and 'route="/healthz"' in line
    )


def test_counters_never_go_backwards_across_two_workers(two_workers: str) -> None:
    seen: list[float] = []
    with _fresh_connections(two_workers) as client:
        for _ in range(REQUESTS):
            assert client.get("/healthz").status_code == 200
            scrape = client.get("/metrics")
            assert scrape.status_code == 200
            seen.append(_healthz_count(scrape.text))
    assert seen == sorted(seen), f"a counter went backwards: {seen}"
    # Every request is counted once, by whichever worker served it (the latest may still
    # be on its way into the count when the scrape is answered).
    assert seen[-1] >= REQUESTS - 1, seen
