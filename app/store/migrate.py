"""Running the Alembic migrations from code (serve start-up, `compactor migrate`, tests).

The migration scripts live in the top-level `migrations/` folder of the repository; a
wheel installs the same files under `<prefix>/share/context-compactor/migrations`, so an
installed service (`pip install .`, not only `-e`) migrates too.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app.store.database import create_db_engine

# Any fixed 64-bit number: the key of the PostgreSQL advisory lock that serializes
# migrations across replicas starting together ("compactor" in ASCII).
MIGRATION_LOCK_KEY = 0x636F6D7061637472
_SHARE = Path("share") / "context-compactor" / "migrations"


class MigrationsNotFoundError(RuntimeError):
    """The migration scripts are not where an installed or checked-out service has them."""


def migrations_dir() -> Path:
    """The migrations folder: `COMPACTOR_MIGRATIONS_DIR`, else the one beside the package
    (a checkout or editable install), else the one a wheel installed."""
    configured = os.environ.get("COMPACTOR_MIGRATIONS_DIR")
    if configured:
        return Path(configured)
    candidates = [
        Path(__file__).resolve().parents[2] / "migrations",
        Path(sysconfig.get_path("data")) / _SHARE,
    ]
    for candidate in candidates:
        if (candidate / "env.py").is_file():
            return candidate
    raise MigrationsNotFoundError(
        "the migration scripts were not found (looked in "
        + ", ".join(str(c) for c in candidates)
        + "); set COMPACTOR_MIGRATIONS_DIR to the migrations folder"
    )


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
    """Applies pending migrations. On PostgreSQL, replicas starting together take turns
    under an advisory lock (the second finds nothing left to do); SQLite's own write lock
    serializes them there."""
    ensure_sqlite_directory(url)
    config = alembic_config(url)
    if make_url(url).get_backend_name() not in ("postgresql", "postgres"):
        command.upgrade(config, revision)
        return
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            connection.commit()
            try:
                config.attributes["connection"] = connection
                command.upgrade(config, revision)
                connection.commit()
            finally:
                connection.execute(
                    text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY}
                )
                connection.commit()
    finally:
        engine.dispose()


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)


def schema_problem(url: str) -> str | None:
    """None when the database's schema is at the newest migration, else what is wrong
    (said once at start, so an operator sees it before the first request fails)."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy.exc import SQLAlchemyError

    heads = set(ScriptDirectory.from_config(alembic_config(url)).get_heads())
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            current = set(MigrationContext.configure(connection).get_current_heads())
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return f"the database cannot be reached: {reason}"
    finally:
        engine.dispose()
    if current == heads:
        return None
    at = ", ".join(sorted(current)) or "no revision"
    return (
        f"database schema is not at head: run `compactor migrate` "
        f"(the database is at {at}, this service needs {', '.join(sorted(heads))})"
    )
