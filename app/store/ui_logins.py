"""SQL of the inspector's logins (table `ui_logins`): flush, never commit."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.store.models import UiLoginRow
from app.store.views import UiLogin


class UiLoginRepository:
    """Adds, finds and deletes inspector logins by the hash of their token."""

    def __init__(self, db: Session) -> None:
        self.db = db

    def add(self, login: UiLogin, max_per_tenant: int) -> None:
        """Stores a login; the tenant's oldest beyond `max_per_tenant` are dropped."""
        row = UiLoginRow(**asdict(login))
        self.db.add(row)
        self.db.flush()
        beyond = (
            select(UiLoginRow.token_hash)
            .where(UiLoginRow.tenant == row.tenant)
            .order_by(UiLoginRow.created_at.desc(), UiLoginRow.token_hash)
            .offset(max_per_tenant)
        )
        stale = list(self.db.scalars(beyond))
        if stale:
            self.db.execute(delete(UiLoginRow).where(UiLoginRow.token_hash.in_(stale)))

    def live(self, token_hash: str, now: datetime) -> UiLogin | None:
        """The login with this token hash, unless it expired by `now`."""
        row = self.db.scalar(
            select(UiLoginRow).where(
                UiLoginRow.token_hash == token_hash, UiLoginRow.expires_at > now
            )
        )
        if row is None:
            return None
        return UiLogin(row.token_hash, row.tenant, row.key_id, row.created_at, row.expires_at)

    def delete(self, token_hash: str) -> None:
        self.db.execute(delete(UiLoginRow).where(UiLoginRow.token_hash == token_hash))

    def delete_expired(self, now: datetime) -> None:
        self.db.execute(delete(UiLoginRow).where(UiLoginRow.expires_at <= now))
