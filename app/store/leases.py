"""Leases in the database (the `LeaseStore` port of `app.services.ports`): one row per
held lease, shared by every replica on one PostgreSQL (or by the workers on one SQLite
file). Taking a free or expired lease, or extending one's own, is one conditional
UPDATE, or an INSERT when there is no row; a concurrent twin that inserted first wins.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager

from sqlalchemy import delete, or_, update
from sqlalchemy.orm import Session, sessionmaker

from app.store.errors import DuplicateKeyError, translated_transaction
from app.store.models import LeaseRow


def new_holder() -> str:
    """A holder id for one replica (random, so two replicas never share one)."""
    return uuid.uuid4().hex


class SqlLeases:
    """Leases in the `leases` table, held as `holder` (one per replica)."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        holder: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._sessions = sessions
        self.holder = holder or new_holder()
        self._clock = clock

    def _transaction(self) -> AbstractContextManager[Session]:
        return translated_transaction(self._sessions)

    def acquire(self, key: str, ttl_seconds: float) -> bool:
        """Takes the lease when it is free or expired, or extends it when this replica
        holds it; False when another replica holds it."""
        now = self._clock()
        expires = now + ttl_seconds
        with self._transaction() as db:
            taken = db.execute(
                update(LeaseRow)
                .where(
                    LeaseRow.name == key,
                    or_(LeaseRow.holder == self.holder, LeaseRow.expires_at <= now),
                )
                .values(holder=self.holder, expires_at=expires)
                .execution_options(synchronize_session=False)
            )
            if getattr(taken, "rowcount", 0) == 1:
                return True
        try:
            with self._transaction() as db:
                db.add(LeaseRow(name=key, holder=self.holder, expires_at=expires))
        except DuplicateKeyError:
            return False
        return True

    def release(self, key: str) -> None:
        """Gives the lease up if this replica still holds it."""
        with self._transaction() as db:
            db.execute(
                delete(LeaseRow)
                .where(LeaseRow.name == key, LeaseRow.holder == self.holder)
                .execution_options(synchronize_session=False)
            )
