"""The TypeScript client's own suite (`npm test`: types regenerated without a diff, tsc,
`node --test`) against a real service on a loopback port."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "typescript"


def test_the_typescript_client_passes_its_suite(compactor_url: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have Node.js and npm for the TypeScript client (.ci/run)")
        pytest.skip("npm is not installed")
    if not (CLIENT / "node_modules" / "typescript").is_dir():
        pytest.fail("run `npm ci` in clients/typescript first (scripts/test does)")
    done = subprocess.run(
        [npm, "test", "--silent"],
        cwd=CLIENT,
        env={**os.environ, "COMPACTOR_URL": compactor_url},
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "# fail 0" in report and "# pass 0" not in report, report
