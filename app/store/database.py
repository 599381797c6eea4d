"""Engine and session factory from a plain database URL."""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker


class UnsupportedDatabaseError(ValueError):
    """The URL names a database this service does not support."""


def normalize_url(url: str) -> str:
    """`sqlite:///path` and plain `postgresql://…` → URLs with the drivers we ship."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername="sqlite+pysqlite").render_as_string(hide_password=False)
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    raise UnsupportedDatabaseError(
        f"unsupported database URL scheme {parsed.drivername!r}: use sqlite:/// or postgresql://"
    )


SqliteSynchronous = Literal["FULL", "NORMAL"]


def create_db_engine(url: str, *, sqlite_synchronous: SqliteSynchronous = "FULL") -> Engine:
    """An engine with the settings each backend needs to be safe under concurrency.

    On SQLite, `sqlite_synchronous` FULL (the default) makes every commit durable: the
    write-ahead log is synced before the append is acknowledged. Error messages never
    quote SQL parameters: they hold system prompts and messages."""
    if sqlite_synchronous not in ("FULL", "NORMAL"):
        raise ValueError(f"sqlite_synchronous must be FULL or NORMAL, not {sqlite_synchronous!r}")
    normalized = normalize_url(url)
    if normalized.startswith("sqlite"):
        engine = create_engine(
            normalized,
            connect_args={"timeout": 30, "check_same_thread": False},
            hide_parameters=True,
        )
        event.listen(engine, "connect", partial(_sqlite_pragmas, synchronous=sqlite_synchronous))
        # pysqlite's own transaction handling defers BEGIN; take it over so a write
        # transaction starts with BEGIN IMMEDIATE and writers queue instead of deadlocking.
        event.listen(engine, "begin", _sqlite_begin_immediate)
        return engine
    return create_engine(
        normalized, pool_pre_ping=True, pool_size=10, max_overflow=10, hide_parameters=True
    )


def _sqlite_pragmas(dbapi_connection: Any, _record: Any, *, synchronous: SqliteSynchronous) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    # FULL or NORMAL only (checked in create_db_engine).
    cursor.execute(f"PRAGMA synchronous={synchronous}")
    cursor.close()


def _sqlite_begin_immediate(connection: Any) -> None:
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)
