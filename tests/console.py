"""The `compactor` console entry point run in the test process: the same `main()` a
child process would run, for the checks of what it prints and how it exits, without
paying an interpreter start and an app import per case (a few tests still spawn the real
command: tests/integration/test_cli_errors.py, tests/e2e)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.cli import main


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def _refuse_to_serve(*args: object, **kwargs: object) -> None:
    raise AssertionError("`compactor serve` got past its configuration checks")


def run_main(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    env: dict[str, str],
    cwd: Path,
) -> Ran:
    """`compactor ARGS` with only `env` of the COMPACTOR_ variables set, in `cwd`. A
    `serve` that passes its checks fails the test instead of starting a server."""
    import uvicorn

    for name in [n for n in os.environ if n.startswith("COMPACTOR_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", ["compactor", *args])
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # typer installs its own
    monkeypatch.setattr(uvicorn, "run", _refuse_to_serve)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    out, err = capsys.readouterr()
    code = exited.value.code
    return Ran(code if isinstance(code, int) else (0 if code is None else 1), out, err)
