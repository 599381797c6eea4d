"""A throwaway PostgreSQL cluster for the tests, from the Debian server binaries.

Runs initdb/pg_ctl as the `postgres` system user when the tests run as root (PostgreSQL
refuses to run as root), on a free loopback port and a temporary directory it owns.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def server_bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True)
class Cluster:
    """A running throwaway cluster: its URL, and a way to restart it (a fault run)."""

    url: str
    restart: Callable[[], None]


@contextmanager
def throwaway_cluster() -> Iterator[str]:
    """Starts a cluster; yields a `postgresql://` URL of its `postgres` database."""
    with restartable_cluster() as cluster:
        yield cluster.url


@contextmanager
def restartable_cluster() -> Iterator[Cluster]:
    """Starts a cluster; yields it (`restart()` stops it at once, as a crash would, and
    starts it again on the same port)."""
    bin_dir = server_bin_dir()
    assert bin_dir is not None
    base = Path(tempfile.mkdtemp(prefix="compactor-pg-"))
    as_postgres: list[str] = []
    if os.geteuid() == 0:
        as_postgres = ["runuser", "-u", "postgres", "--"]
        shutil.chown(base, "postgres", "postgres")
    data = base / "data"
    port = _free_port()

    def run(*args: str) -> None:
        subprocess.run([*as_postgres, *args], check=True, capture_output=True, timeout=120)

    run(
        str(bin_dir / "initdb"),
        "-D",
        str(data),
        "-U",
        "postgres",
        "--auth=trust",
        "-E",
        "UTF8",
        "--no-sync",
    )
    options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"

    def start() -> None:
        run(
            str(bin_dir / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(base / "log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def restart() -> None:
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        start()

    start()
    try:
        yield Cluster(f"postgresql://postgres@127.0.0.1:{port}/postgres", restart)
    finally:
        subprocess.run(
            [*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(base, ignore_errors=True)
