"""Creating, reading, listing and deleting sessions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.formats.registry import FORMATS
from app.services.sessions.transactions import SessionStore
from app.services.sessions.views import SessionSettings, SessionView
from app.store.models import SessionRow
from app.store.repositories import SessionRepository, new_id


@dataclass(frozen=True, slots=True)
class NewSession:
    """What a caller may set on a new session; everything is optional."""

    model: str | None = None
    format: str | None = None
    system: Any = None
    tools: list[Any] = field(default_factory=list)
    settings: SessionSettings = field(default_factory=SessionSettings)
    metadata: dict[str, Any] = field(default_factory=dict)


class SessionCatalog:
    def __init__(self, store: SessionStore) -> None:
        self._store = store

    def create(self, tenant: str, new: NewSession) -> SessionView:
        """A new, empty session with its settings."""
        if new.format is not None:
            FORMATS.get(new.format)  # an unknown name is refused before anything is written
        row = SessionRow(
            id=new_id(),
            tenant=tenant,
            model=new.model,
            format=new.format,
            system=new.system,
            tools=list(new.tools),
            settings=new.settings.to_json(),
            meta=dict(new.metadata),
            entry_count=0,
            compaction_count=0,
            system_prefix_count=0,
        )
        with self._store.transaction() as db:
            return SessionView.of(SessionRepository(db).add(row))

    def get(self, tenant: str, session_id: str) -> SessionView:
        with self._store.transaction() as db:
            return SessionView.of(self._store.require(db, tenant, session_id))

    def list_for_tenant(
        self, tenant: str, offset: int, limit: int
    ) -> tuple[list[SessionView], int]:
        with self._store.transaction() as db:
            rows, total = SessionRepository(db).list_for_tenant(tenant, offset, limit)
            return [SessionView.of(row) for row in rows], total

    def delete(self, tenant: str, session_id: str) -> None:
        with self._store.transaction() as db:
            self._store.require(db, tenant, session_id)
            SessionRepository(db).delete(session_id)
