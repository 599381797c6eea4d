"""Repositories own all SQL. They flush, never commit."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, delete, func, select, update
from sqlalchemy.orm import Session

from app.store.models import (
    CompactionRow,
    IdempotencyKeyRow,
    SessionRow,
    SummaryCacheRow,
    TranscriptEntryRow,
)


def new_id() -> str:
    return str(uuid.uuid4())


class SessionRepository:
    def __init__(self, db: Session) -> None:
        self.db = db

    def add(self, row: SessionRow) -> SessionRow:
        self.db.add(row)
        self.db.flush()
        return row

    def get(self, session_id: str, tenant: str) -> SessionRow | None:
        row = self.db.get(SessionRow, session_id)
        return row if row is not None and row.tenant == tenant else None

    def lock(self, session_id: str, tenant: str) -> SessionRow | None:
        """The session row, freshly read and locked until the transaction ends, so a
        decision made on it (format, system prefix) cannot race another writer. PostgreSQL:
        SELECT ... FOR UPDATE; SQLite: every write transaction starts with BEGIN IMMEDIATE,
        which already serializes writers (FOR UPDATE renders as nothing there)."""
        row = self.db.scalars(
            select(SessionRow)
            .where(SessionRow.id == session_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        ).first()
        return row if row is not None and row.tenant == tenant else None

    def list_for_tenant(self, tenant: str, offset: int, limit: int) -> tuple[list[SessionRow], int]:
        query = select(SessionRow).where(SessionRow.tenant == tenant)
        total = self.db.scalar(select(func.count()).select_from(query.subquery())) or 0
        rows = self.db.scalars(
            query.order_by(SessionRow.created_at.desc(), SessionRow.id).offset(offset).limit(limit)
        ).all()
        return list(rows), total

    def reserve_seqs(self, session_id: str, count: int) -> int:
        """Atomically claims `count` sequence numbers; returns the first one."""
        new_count = self.db.execute(
            update(SessionRow)
            .where(SessionRow.id == session_id)
            .values(entry_count=SessionRow.entry_count + count)
            .returning(SessionRow.entry_count)
        ).scalar_one_or_none()
        if new_count is None:
            # Deleted by a concurrent request since it was read.
            raise LookupError(session_id)
        return int(new_count) - count

    def ping(self) -> None:
        """A cheap query that fails unless the database answers and the schema exists."""
        self.db.execute(select(SessionRow.id).limit(1))

    def delete(self, session_id: str) -> None:
        # Children first: SQLite enforces ON DELETE CASCADE only with foreign_keys on, and
        # an explicit order keeps both backends identical.
        for table in (IdempotencyKeyRow, TranscriptEntryRow):
            self.db.execute(delete(table).where(table.session_id == session_id))
        self.db.execute(
            update(CompactionRow)
            .where(CompactionRow.session_id == session_id)
            .values(previous_id=None)
        )
        self.db.execute(delete(CompactionRow).where(CompactionRow.session_id == session_id))
        self.db.execute(delete(SessionRow).where(SessionRow.id == session_id))
        self.db.flush()


class TranscriptRepository:
    def __init__(self, db: Session) -> None:
        self.db = db

    def append(
        self, session_id: str, first_seq: int, messages: Sequence[Any], usage: dict[int, Any]
    ) -> None:
        self.db.add_all(
            TranscriptEntryRow(
                session_id=session_id, seq=first_seq + i, message=message, usage=usage.get(i)
            )
            for i, message in enumerate(messages)
        )
        self.db.flush()

    def page(self, session_id: str, offset: int, limit: int) -> list[TranscriptEntryRow]:
        return list(
            self.db.scalars(
                select(TranscriptEntryRow)
                .where(TranscriptEntryRow.session_id == session_id)
                .order_by(TranscriptEntryRow.seq)
                .offset(offset)
                .limit(limit)
            ).all()
        )

    def from_seq(self, session_id: str, first_seq: int) -> list[TranscriptEntryRow]:
        return list(
            self.db.scalars(
                select(TranscriptEntryRow)
                .where(
                    TranscriptEntryRow.session_id == session_id,
                    TranscriptEntryRow.seq >= first_seq,
                )
                .order_by(TranscriptEntryRow.seq)
            ).all()
        )


class CompactionRepository:
    def __init__(self, db: Session) -> None:
        self.db = db

    def latest(self, session_id: str) -> CompactionRow | None:
        return self.db.scalars(
            select(CompactionRow)
            .where(CompactionRow.session_id == session_id)
            .order_by(CompactionRow.ordinal.desc())
            .limit(1)
        ).first()

    def add(self, row: CompactionRow) -> CompactionRow:
        self.db.add(row)
        self.db.flush()
        return row

    def all(self, session_id: str) -> list[CompactionRow]:
        return list(
            self.db.scalars(
                select(CompactionRow)
                .where(CompactionRow.session_id == session_id)
                .order_by(CompactionRow.ordinal)
            ).all()
        )


class IdempotencyRepository:
    def __init__(self, db: Session) -> None:
        self.db = db

    def get(self, session_id: str, key: str) -> IdempotencyKeyRow | None:
        return self.db.get(IdempotencyKeyRow, (session_id, key))

    def add(self, row: IdempotencyKeyRow) -> None:
        self.db.add(row)
        self.db.flush()


# On the proxy's hot path: a plain Core statement built once (an ORM-enabled select built
# per call costs twice as much as the indexed query itself).
_SUMMARY_CACHE = SummaryCacheRow.__table__.c
_CANDIDATES = (
    select(_SUMMARY_CACHE.id, _SUMMARY_CACHE.prefix_len, _SUMMARY_CACHE.prefix_hash)
    .where(
        _SUMMARY_CACHE.tenant == bindparam("tenant"),
        _SUMMARY_CACHE.scope_key == bindparam("scope_key"),
    )
    .order_by(_SUMMARY_CACHE.prefix_len.desc())
)


class SummaryCacheRepository:
    def __init__(self, db: Session) -> None:
        self.db = db

    def candidates(self, tenant: str, scope_key: str) -> list[tuple[int, int, str]]:
        """(id, prefix_len, prefix_hash) of the tenant's entries in this scope, longest
        prefix first."""
        rows = self.db.execute(_CANDIDATES, {"tenant": tenant, "scope_key": scope_key}).all()
        return [(int(r[0]), int(r[1]), str(r[2])) for r in rows]

    def get(self, entry_id: int) -> SummaryCacheRow | None:
        return self.db.get(SummaryCacheRow, entry_id)

    def add(self, row: SummaryCacheRow, keep_per_tenant: int) -> None:
        """Adds `row`, then evicts the tenant's oldest entries beyond `keep_per_tenant`."""
        self.db.add(row)
        self.db.flush()
        newest = (
            select(SummaryCacheRow.id)
            .where(SummaryCacheRow.tenant == row.tenant)
            .order_by(SummaryCacheRow.id.desc())
            .limit(keep_per_tenant)
        )
        self.db.execute(
            delete(SummaryCacheRow).where(
                SummaryCacheRow.tenant == row.tenant, SummaryCacheRow.id.not_in(newest)
            )
        )
        self.db.flush()
