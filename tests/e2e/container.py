"""Runs what a container would run, with no container engine: the image's environment,
the command and environment a manifest gives, a read-only root filesystem, and writable
mounts only where the manifest puts a volume.

The read-only root is a private mount namespace (`unshare --mount`, root only): `/` is
remounted read-only inside it, so a write anywhere else fails with EROFS as it would in
a container with `readOnlyRootFilesystem: true`. Each writable path P of the manifest is
stood in for by a fresh host folder (a tmpfs for an emptyDir/tmpfs, a bind mount for a
named volume that outlives one container), and P is rewritten to that folder in the
command and environment; `/tmp` becomes `TMPDIR`. The process runs as the test's user:
the image's non-root user is checked from the files (the interpreter under test lives in
a folder that user could not read).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.postgres import _free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text("utf-8")

_NAMESPACE_SCRIPT = """
set -e
while [ "$1" != "--" ]; do
  case "$1" in
    bind) mount --bind "$2" "$2" ;;
    tmpfs) mount -t tmpfs -o size=256m,mode=0700 tmpfs "$2" ;;
  esac
  shift 2
done
shift
mount -o remount,bind,ro /
exec "$@"
"""


def _dockerfile_lines() -> list[str]:
    return DOCKERFILE.replace("\\\n", " ").splitlines()


def exec_form(instruction: str) -> list[str]:
    """The JSON array of the last `instruction [...]` line (HEALTHCHECK's CMD included)."""
    line = [ln for ln in _dockerfile_lines() if ln.strip().startswith(instruction)][-1]
    parsed: list[str] = json.loads(line[line.index("[") :])
    return parsed


def dockerfile_value(instruction: str) -> str:
    """The argument of the last `instruction` line of the runtime stage (USER, WORKDIR)."""
    line = [ln for ln in _dockerfile_lines() if ln.startswith(f"{instruction} ")][-1]
    return line.split(" ", 1)[1].strip()


def image_env() -> dict[str, str]:
    """The runtime stage's ENV (what every container of the image starts with)."""
    runtime = DOCKERFILE.replace("\\\n", " ").split("\nFROM ")[-1]
    env: dict[str, str] = {}
    for line in runtime.splitlines():
        if line.startswith("ENV "):
            env.update(re.findall(r"(\w+)=(\S+)", line))
    return env


def read_only_root_problem() -> str | None:
    """Why a read-only root cannot be set up here, or None when it can."""
    remount = ["mount", "-o", "remount,bind,ro", "/"]
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--", *remount],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        return f"unshare --mount / remount read-only failed: {probe.stderr.strip() or 'rc != 0'}"
    return None


@dataclass
class Container:
    """One container's command, environment and writable mounts, as a manifest says."""

    command: list[str]
    env: dict[str, str]
    # mount path in the container → "tmpfs" (emptyDir, tmpfs) or "volume" (kept between runs)
    writable: dict[str, str] = field(default_factory=dict)


@dataclass
class Host:
    """Where a test keeps the folders that stand in for the container's writable mounts."""

    base: Path
    folders: dict[str, Path] = field(default_factory=dict)

    def folder(self, mount_path: str) -> Path:
        if mount_path not in self.folders:
            name = mount_path.strip("/").replace("/", "-") or "root"
            self.folders[mount_path] = self.base / f"mount-{name}"
            self.folders[mount_path].mkdir(parents=True, exist_ok=True)
        return self.folders[mount_path]


def _local(argument: str) -> list[str]:
    """The image's executables as this test environment runs them."""
    if argument == "compactor":
        return [sys.executable, "-m", "app.cli"]
    if argument == "python":
        return [sys.executable]
    return [argument]


def _rewrite(value: str, paths: Mapping[str, Path]) -> str:
    for mount_path, folder in paths.items():
        value = value.replace(mount_path, str(folder))
    return value


def host_argv(container: Container, host: Host) -> tuple[list[str], dict[str, str]]:
    """The command line (inside the read-only namespace) and environment to run it with."""
    paths = {p: host.folder(p) for p in container.writable}
    mounts: list[str] = []
    for mount_path, kind in container.writable.items():
        mounts += ["tmpfs" if kind == "tmpfs" else "bind", str(paths[mount_path])]
    command = [part for arg in container.command[:1] for part in _local(arg)]
    command += [_rewrite(arg, paths) for arg in container.command[1:]]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(host.base)}
    env.update({k: _rewrite(v, paths) for k, v in container.env.items()})
    if "/tmp" in paths:
        env["TMPDIR"] = str(paths["/tmp"])
    wrapped = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c"]
    wrapped += [_NAMESPACE_SCRIPT, "sh", *mounts, "--", *command]
    return wrapped, env


def run_to_completion(container: Container, host: Host) -> subprocess.CompletedProcess[str]:
    """Runs a one-shot container (a Job, compose's migrate) and waits for it."""
    argv, env = host_argv(container, host)
    return subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)


@dataclass
class Running:
    url: str
    log: Path

    def log_text(self) -> str:
        return self.log.read_text("utf-8", errors="replace")


@contextmanager
def serving(container: Container, host: Host, port: int) -> Iterator[Running]:
    """Runs a serving container until /readyz answers 200; stops it on exit."""
    argv, env = host_argv(container, host)
    log_path = host.base / f"serve-{port}.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        running = Running(f"http://127.0.0.1:{port}", log_path)
        try:
            deadline = time.monotonic() + 90
            # One client for the polls: a new one per poll loads the CA bundle each time,
            # which on a loaded machine took longer than the container's start.
            with httpx.Client(timeout=2) as probe:
                while True:
                    try:
                        if probe.get(f"{running.url}/readyz").status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    assert server.poll() is None, running.log_text()
                    assert time.monotonic() < deadline, "not ready:\n" + running.log_text()
                    time.sleep(0.2)
            yield running
        finally:
            server.terminate()
            server.wait(timeout=30)


def with_port(arguments: Sequence[str], container_port: int, port: int) -> list[str]:
    """`arguments` with the container's port replaced by a free one of this machine."""
    return [re.sub(rf"\b{container_port}\b", str(port), arg) for arg in arguments]


__all__ = [
    "Container",
    "Host",
    "Running",
    "_free_port",
    "dockerfile_value",
    "exec_form",
    "image_env",
    "read_only_root_problem",
    "run_to_completion",
    "serving",
    "with_port",
]
