"""Short transactions on the session store, with store failures as domain errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from app.services.sessions.errors import SessionNotFoundError
from app.services.sessions.store_errors import store_error
from app.store.models import SessionRow
from app.store.repositories import SessionRepository


class SessionStore:
    """Opens transactions; commits at the end of the block, rolls back on any error."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        try:
            with self._sessions.begin() as db:
                yield db
        except DBAPIError as exc:
            translated = store_error(exc)
            if translated is None:
                raise
            raise translated from exc

    @staticmethod
    def require(db: Session, tenant: str, session_id: str) -> SessionRow:
        """The tenant's session row; SessionNotFoundError for another tenant's or none."""
        row = SessionRepository(db).get(session_id, tenant)
        if row is None:
            raise SessionNotFoundError(f"session {session_id} not found")
        return row

    def check_database(self) -> str | None:
        """None when the store answers and its tables exist, else what is wrong."""
        try:
            with self._sessions() as db:
                SessionRepository(db).ping()
        except SQLAlchemyError as exc:
            return str(getattr(exc, "orig", None) or exc).splitlines()[0]
        return None
