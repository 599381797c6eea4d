"""A throwaway Redis for the tests, from Debian's `redis-server`: a free loopback port,
a temporary directory, no persistence; stopped (and its directory removed) on exit."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Generous: a loaded 2-core machine can take seconds to start a process.
START_TIMEOUT_SECONDS = 30


def redis_server_binary() -> str | None:
    return shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One running redis-server; `stop` and `start` again on the same port (an outage)."""

    def __init__(self, binary: str, base: Path) -> None:
        self.binary, self.base, self.port = binary, base, _free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--dir", str(self.base), "--save", "", "--appendonly", "no"]
        with (self.base / "redis.log").open("ab") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not _answers(self.port):
            assert self._process.poll() is None, (self.base / "redis.log").read_text()
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=30)
            self._process = None


@contextmanager
def throwaway_redis() -> Iterator[RedisServer]:
    """Starts a redis-server; yields it running, stops it on exit."""
    binary = redis_server_binary()
    assert binary is not None
    base = Path(tempfile.mkdtemp(prefix="compactor-redis-"))
    server = RedisServer(binary, base)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
