"""A wheel install (`pip install .`, not `-e`) serves and migrates: the migrations travel
in the wheel (issue 11). The wheel goes into a fresh venv; its dependencies come from the
test environment's site-packages so the test needs no network."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_wheel_install_migrates_outside_the_checkout(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    wheel = next(wheels.glob("context_compactor-*.whl"))
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    elsewhere = tmp_path / "run"
    elsewhere.mkdir()
    database = elsewhere / "compactor.db"
    env = {
        "PATH": "/usr/bin:/bin",
        # Dependencies from the test environment, the app from the wheel only.
        "PYTHONPATH": sysconfig.get_paths()["purelib"],
        "COMPACTOR_DATABASE_URL": f"sqlite:///{database}",
    }
    migrate = subprocess.run(
        [str(target / "bin" / "compactor"), "migrate"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert migrate.returncode == 0, migrate.stderr
    with sqlite3.connect(database) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert {"sessions", "transcript_entries", "compactions"} <= tables
    # Where the installed app finds its migrations, and the inspector's templates (package
    # data: the wheel renders its pages too); one interpreter start for both.
    located = subprocess.run(
        [str(python), "-c", "import app.store.migrate as m; print(m.migrations_dir()); "
         "from app.api.ui.routes import templates as t; "
         "print(t.env.get_template('login.html').filename)"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert located.returncode == 0, located.stderr
    migrations, template = located.stdout.split()
    assert migrations.startswith(str(target)), located.stdout
    assert template.startswith(str(target)), located.stdout
