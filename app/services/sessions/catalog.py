"""Creating, reading, listing and deleting sessions."""

from __future__ import annotations

from app.formats.registry import FORMATS
from app.services.sessions.transactions import SessionStore
from app.store.views import NewSession, SessionView

__all__ = ["NewSession", "SessionCatalog"]


class SessionCatalog:
    def __init__(self, store: SessionStore) -> None:
        self._store = store

    def create(self, tenant: str, new: NewSession) -> SessionView:
        """A new, empty session with its settings."""
        if new.format is not None:
            FORMATS.get(new.format)  # an unknown name is refused before anything is written
        with self._store.transaction() as tx:
            return tx.sessions.add(tenant, new)

    def get(self, tenant: str, session_id: str) -> SessionView:
        with self._store.transaction() as tx:
            return self._store.require(tx, tenant, session_id)

    def list_for_tenant(
        self, tenant: str, offset: int, limit: int
    ) -> tuple[list[SessionView], int]:
        with self._store.transaction() as tx:
            return tx.sessions.list_for_tenant(tenant, offset, limit)

    def delete(self, tenant: str, session_id: str) -> None:
        with self._store.transaction() as tx:
            self._store.require(tx, tenant, session_id)
            tx.sessions.delete(session_id)
