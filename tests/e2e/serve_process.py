"""`compactor serve` as a real subprocess on a free loopback port, for end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True)
class Served:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@contextmanager
def serve(
    tmp_path: Path, *args: str, env: dict[str, str | None] | None = None, host: str = "127.0.0.1"
) -> Iterator[Served]:
    """Runs `compactor serve --host HOST --port P ARGS` until /readyz answers 200; stops it
    on exit. `env` entries override the environment (None removes a variable)."""
    port = free_port()
    environment = {
        **os.environ,
        "COMPACTOR_DATABASE_URL": f"sqlite:///{tmp_path / 'served.db'}",
        "TMPDIR": str(tmp_path),  # where serve makes the workers' metrics folder
    }
    environment.pop("PROMETHEUS_MULTIPROC_DIR", None)
    for name, value in (env or {}).items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    command = [sys.executable, "-m", "app.cli", "serve", "--host", host, "--port", str(port)]
    log = tmp_path / f"serve-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*command, *args], env=environment, stdout=sink, stderr=sink, cwd=Path.cwd()
        )
    url = f"http://127.0.0.1:{port}"
    served = Served(url, process, log)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, served.log_text()
            assert time.monotonic() < deadline, "the server did not start"
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        yield served
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
