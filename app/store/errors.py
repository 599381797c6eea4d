"""The store's own errors, and the one place database library errors become them.

    StoreError                  anything the store could not do
    ├── StoreUnreachableError   the database cannot be reached; nothing was written
    │   └── SchemaOutdatedError it answers, but its tables are missing or older
    ├── ValueRefusedError       it refused a value (a NUL character in PostgreSQL text)
    ├── DuplicateKeyError       a row with the same key exists (a concurrent twin won)
    └── RowGoneError            a row read in this transaction was deleted meanwhile

They carry no HTTP or use-case meaning: the services decide what a duplicate key means
(a replayed append, a compaction that lost the race) and map the rest to their errors.
An adapter for another backend (Redis, say) raises the same classes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

SCHEMA_NOT_AT_HEAD = "database schema is not at head: run `compactor migrate`"
# PostgreSQL undefined_table / undefined_column; SQLite says it in words.
_MISSING_SCHEMA_STATES = frozenset({"42P01", "42703"})
_MISSING_SCHEMA_WORDS = ("no such table", "no such column")
# PostgreSQL unique_violation; SQLite's words for a unique or primary key.
_UNIQUE_STATE = "23505"
_UNIQUE_WORDS = "UNIQUE constraint failed"


class StoreError(Exception):
    """The store could not do what was asked; the transaction was rolled back."""


class StoreUnreachableError(StoreError):
    """The database cannot be reached (down, refusing connections, locked too long)."""


class SchemaOutdatedError(StoreUnreachableError):
    """The database answers but its tables are missing or older than this service."""


class ValueRefusedError(StoreError):
    """The database refused a value (a NUL character in PostgreSQL text, say)."""


class DuplicateKeyError(StoreError):
    """A row with the same unique key exists: a concurrent writer got there first."""


class RowGoneError(StoreError):
    """A row read earlier in the transaction was deleted by a concurrent one."""


def store_error(exc: SQLAlchemyError) -> StoreError:
    """The store error a database library error means (the base class for a bug of ours)."""
    reason = first_line(exc)
    if isinstance(exc, DBAPIError):
        if getattr(exc.orig, "sqlstate", None) in _MISSING_SCHEMA_STATES or any(
            words in reason for words in _MISSING_SCHEMA_WORDS
        ):
            return SchemaOutdatedError(f"{SCHEMA_NOT_AT_HEAD} ({reason})")
        if isinstance(exc, IntegrityError) and (
            getattr(exc.orig, "sqlstate", None) == _UNIQUE_STATE or _UNIQUE_WORDS in reason
        ):
            return DuplicateKeyError(reason)
        if isinstance(exc, DataError):
            return ValueRefusedError(f"the database refused a value of this request: {reason}")
        if isinstance(exc, OperationalError):
            return StoreUnreachableError(f"the session store is unavailable: {reason}")
    return StoreError(reason)


def first_line(exc: SQLAlchemyError) -> str:
    """The driver's own message: SQLAlchemy's adds the statement, which is not for callers."""
    return (str(getattr(exc, "orig", None) or exc).strip().splitlines() or ["unknown error"])[0]


@contextmanager
def translated_transaction(sessions: sessionmaker[Session]) -> Iterator[Session]:
    """One transaction of `sessions` (committed at the end), its driver errors as
    StoreError: what the store's adapters outside the session store use."""
    try:
        with sessions() as db, db.begin():
            yield db
    except SQLAlchemyError as exc:
        raise store_error(exc) from exc
