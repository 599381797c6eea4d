"""Running the Alembic migrations from code (serve start-up, `compactor migrate`, tests)."""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import make_url


def migrations_dir() -> Path:
    """The migrations folder: `COMPACTOR_MIGRATIONS_DIR`, else the one beside the package."""
    configured = os.environ.get("COMPACTOR_MIGRATIONS_DIR")
    return Path(configured) if configured else Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    # `%` is Alembic's interpolation character; escape it for passwords that contain it.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def ensure_sqlite_directory(url: str) -> None:
    """Creates the folder of a SQLite file so a fresh checkout starts without setup."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)


def upgrade(url: str, revision: str = "head") -> None:
    ensure_sqlite_directory(url)
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)
