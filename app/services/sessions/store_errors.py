"""Database failures as session errors: unreachable, schema not migrated, value refused."""

from __future__ import annotations

from sqlalchemy.exc import DataError, DBAPIError, OperationalError

from app.engine.errors import CompactorError
from app.services.sessions.errors import (
    RejectedValueError,
    SchemaNotAtHeadError,
    StoreUnavailableError,
)

SCHEMA_NOT_AT_HEAD = "database schema is not at head: run `compactor migrate`"
# PostgreSQL undefined_table / undefined_column; SQLite says it in words.
_MISSING_SCHEMA_STATES = frozenset({"42P01", "42703"})
_MISSING_SCHEMA_WORDS = ("no such table", "no such column")


def store_error(exc: DBAPIError) -> CompactorError | None:
    """The session error a database failure means, or None for a bug of ours."""
    reason = _first_line(exc)
    if getattr(exc.orig, "sqlstate", None) in _MISSING_SCHEMA_STATES or any(
        words in reason for words in _MISSING_SCHEMA_WORDS
    ):
        return SchemaNotAtHeadError(f"{SCHEMA_NOT_AT_HEAD} ({reason})")
    if isinstance(exc, DataError):
        return RejectedValueError(f"the database refused a value of this request: {reason}")
    if isinstance(exc, OperationalError):
        return StoreUnavailableError(f"the session store is unavailable: {reason}")
    return None


def _first_line(exc: DBAPIError) -> str:
    # The driver's own message: SQLAlchemy's adds the statement, which is not for callers.
    return (str(exc.orig or exc).strip().splitlines() or ["unknown error"])[0]
