"""Short transactions on the session store, with store failures as session errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from app.services.sessions.errors import SessionNotFoundError
from app.services.sessions.store_errors import session_error
from app.store.errors import StoreError
from app.store.transactions import SessionDatabase, StoreTransaction
from app.store.views import SessionView


class SessionStore:
    """Opens transactions; commits at the end of the block, rolls back on any error."""

    def __init__(self, database: SessionDatabase) -> None:
        self._database = database

    @contextmanager
    def transaction(self) -> Iterator[StoreTransaction]:
        try:
            with self._database.transaction() as tx:
                yield tx
        except StoreError as exc:
            translated = session_error(exc)
            if translated is None:
                raise
            raise translated from exc

    @staticmethod
    def require(tx: StoreTransaction, tenant: str, session_id: str) -> SessionView:
        """The tenant's session; SessionNotFoundError for another tenant's or none."""
        session = tx.sessions.get(session_id, tenant)
        if session is None:
            raise SessionNotFoundError(f"session {session_id} not found")
        return session

    def check_database(self) -> str | None:
        """None when the store answers and its tables exist, else what is wrong."""
        return self._database.check()
