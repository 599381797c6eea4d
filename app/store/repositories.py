"""Repositories own all SQL of the session store. They take and return the store's views
(`app.store.views`), flush, and never commit: the transaction's owner does."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, delete, func, select, tuple_, update
from sqlalchemy.orm import Session

from app.store.errors import RowGoneError
from app.store.mapping import (
    aware,
    compaction_record,
    compaction_row,
    session_view,
    settings_to_json,
    stall_to_json,
)
from app.store.models import (
    BoundTurnRow,
    CompactionRow,
    IdempotencyKeyRow,
    SessionChangeRow,
    SessionRow,
    TranscriptEntryRow,
)
from app.store.views import (
    AppendResult,
    BoundTurn,
    CompactionRecord,
    CompactionStall,
    IdempotentAppend,
    NewCompaction,
    NewSession,
    SessionSettings,
    SessionView,
    SettingsChange,
    StoredEntry,
    TranscriptEntry,
)


def new_id() -> str:
    return str(uuid.uuid4())


class SessionRepository:
    def __init__(self, db: Session) -> None:
        self.db = db

    def add(self, tenant: str, new: NewSession) -> SessionView:
        """A new, empty session with its settings."""
        row = SessionRow(
            id=new_id(),
            tenant=tenant,
            model=new.model,
            format=new.format,
            system=new.system,
            tools=list(new.tools),
            settings=settings_to_json(new.settings),
            meta=dict(new.metadata),
            entry_count=0,
            compaction_count=0,
            system_prefix_count=0,
        )
        self.db.add(row)
        self.db.flush()
        return session_view(row)

    def get(self, session_id: str, tenant: str) -> SessionView | None:
        row = self.db.get(SessionRow, session_id)
        return session_view(row) if row is not None and row.tenant == tenant else None

    def lock(self, session_id: str, tenant: str) -> SessionView | None:
        """The session, freshly read and locked until the transaction ends, so a decision
        made on it (format, system prefix) cannot race another writer. PostgreSQL:
        SELECT ... FOR UPDATE; SQLite: every write transaction starts with BEGIN IMMEDIATE,
        which already serializes writers (FOR UPDATE renders as nothing there)."""
        row = self.db.scalars(
            select(SessionRow)
            .where(SessionRow.id == session_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        ).first()
        return session_view(row) if row is not None and row.tenant == tenant else None

    def list_for_tenant(
        self, tenant: str, offset: int, limit: int
    ) -> tuple[list[SessionView], int]:
        query = select(SessionRow).where(SessionRow.tenant == tenant)
        total = self.db.scalar(select(func.count()).select_from(query.subquery())) or 0
        rows = self.db.scalars(
            query.order_by(SessionRow.created_at.desc(), SessionRow.id).offset(offset).limit(limit)
        ).all()
        return [session_view(row) for row in rows], total

    def reserve_seqs(self, session_id: str, count: int) -> int:
        """Atomically claims `count` sequence numbers; returns the first one."""
        new_count = self.db.execute(
            update(SessionRow)
            .where(SessionRow.id == session_id)
            .values(entry_count=SessionRow.entry_count + count)
            .returning(SessionRow.entry_count)
        ).scalar_one_or_none()
        if new_count is None:
            raise RowGoneError(f"session {session_id} was deleted")
        return int(new_count) - count

    def set_format(self, session_id: str, format_name: str) -> None:
        """Decides the format of a session that had none yet."""
        self._update(session_id, format=format_name)

    def extend_system_prefix(self, session_id: str, count: int) -> None:
        """`count` more leading system entries (always first in the context)."""
        self._update(session_id, system_prefix_count=SessionRow.system_prefix_count + count)

    def set_stall(self, session_id: str, stall: CompactionStall | None) -> None:
        """Records (or clears) the stall that pauses automatic compaction."""
        self._update(session_id, compaction_stall=stall_to_json(stall))

    def take_compaction_lease(
        self, session_id: str, owner: str, now: datetime, until: datetime
    ) -> bool:
        """Claims the session's compaction lease for `owner` until `until`, unless another
        holder's lease is still running at `now`; True when claimed. One UPDATE: two
        replicas cannot both take it."""
        row = SessionRow
        taken = self.db.execute(
            update(row)
            .where(
                row.id == session_id,
                (row.compaction_lease_until.is_(None)) | (row.compaction_lease_until < now),
            )
            .values(compaction_lease_owner=owner, compaction_lease_until=until)
            .returning(row.id)
        ).first()
        return taken is not None

    def renew_compaction_lease(self, session_id: str, owner: str, until: datetime) -> None:
        """Extends `owner`'s lease to `until` (a lease another holder took is left alone)."""
        row = SessionRow
        self.db.execute(
            update(row)
            .where(row.id == session_id, row.compaction_lease_owner == owner)
            .values(compaction_lease_until=until)
        )

    def release_compaction_lease(self, session_id: str, owner: str) -> None:
        """Ends `owner`'s lease (a lease another holder took since is left alone)."""
        row = SessionRow
        self.db.execute(
            update(row)
            .where(row.id == session_id, row.compaction_lease_owner == owner)
            .values(compaction_lease_owner=None, compaction_lease_until=None)
        )

    def compaction_lease(self, session_id: str) -> tuple[datetime | None, int] | None:
        """When the session's compaction lease runs out (None: no lease) and how many
        compactions the session has; None when the session is gone."""
        found = self.db.execute(
            select(SessionRow.compaction_lease_until, SessionRow.compaction_count).where(
                SessionRow.id == session_id
            )
        ).first()
        if found is None:
            return None
        until, count = found
        return (aware(until) if until is not None else None), int(count)

    def set_settings(self, session_id: str, model: str | None, settings: SessionSettings) -> None:
        """Replaces the session's model and compaction settings."""
        self._update(session_id, model=model, settings=settings_to_json(settings))

    def set_counters(
        self,
        session_id: str,
        *,
        entry_count: int,
        system_prefix_count: int,
        compaction_count: int,
        created_at: datetime | None = None,
    ) -> None:
        """The counters of a session whose entries and records were copied in (a fork,
        an import), and when it was first created."""
        values: dict[str, Any] = {
            "entry_count": entry_count,
            "system_prefix_count": system_prefix_count,
            "compaction_count": compaction_count,
        }
        if created_at is not None:
            values["created_at"] = created_at
        self._update(session_id, **values)

    def _update(self, session_id: str, **values: Any) -> None:
        self.db.execute(update(SessionRow).where(SessionRow.id == session_id).values(**values))

    def ping(self) -> None:
        """A cheap query that fails unless the database answers and the schema exists."""
        self.db.execute(select(SessionRow.id).limit(1))

    def delete(self, session_id: str) -> None:
        # Children first: SQLite enforces ON DELETE CASCADE only with foreign_keys on, and
        # an explicit order keeps both backends identical.
        for table in (IdempotencyKeyRow, BoundTurnRow, SessionChangeRow, TranscriptEntryRow):
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
        self,
        session_id: str,
        first_seq: int,
        messages: Sequence[Any],
        usage: dict[int, Any],
        search_texts: Sequence[str | None] | None = None,
    ) -> None:
        texts = search_texts if search_texts is not None else [None] * len(messages)
        self.db.add_all(
            TranscriptEntryRow(
                session_id=session_id,
                seq=first_seq + i,
                message=message,
                usage=usage.get(i),
                search_text=texts[i],
            )
            for i, message in enumerate(messages)
        )
        self.db.flush()

    def stored(
        self, session_id: str, after_seq: int, before_seq: int, limit: int
    ) -> list[StoredEntry]:
        """Up to `limit` entries with `after_seq < seq < before_seq`, in order, with
        everything stored about them (a page of an export or a fork)."""
        entry = TranscriptEntryRow
        query = (
            select(entry.seq, entry.message, entry.usage, entry.search_text, entry.created_at)
            .where(entry.session_id == session_id, entry.seq > after_seq, entry.seq < before_seq)
            .order_by(entry.seq)
            .limit(limit)
        )
        return [
            StoredEntry(int(seq), message, usage or None, text, aware(created))
            for seq, message, usage, text, created in self.db.execute(query).all()
        ]

    def restore(self, session_id: str, entries: Sequence[StoredEntry]) -> None:
        """Writes copied entries as they were (sequence numbers and times kept)."""
        self.db.add_all(
            TranscriptEntryRow(
                session_id=session_id,
                seq=e.seq,
                message=e.message,
                usage=dict(e.usage) if e.usage else None,
                search_text=e.search_text,
                created_at=e.created_at,
            )
            for e in entries
        )
        self.db.flush()

    def page(self, session_id: str, offset: int, limit: int) -> list[TranscriptEntry]:
        return self._read(self._entries(session_id).offset(offset).limit(limit))

    def from_seq(self, session_id: str, first_seq: int) -> list[TranscriptEntry]:
        return self._read(self._entries(session_id, TranscriptEntryRow.seq >= first_seq))

    @staticmethod
    def _entries(session_id: str, *where: ColumnElement[bool]) -> Select[int, Any, Any]:
        # Columns, not ORM objects: a context reads hundreds of entries, and building
        # (and tracking) an object per row costs more than reading and decoding it.
        entry = TranscriptEntryRow
        return (
            select(entry.seq, entry.message, entry.usage)
            .where(entry.session_id == session_id, *where)
            .order_by(entry.seq)
        )

    def _read(self, query: Select[int, Any, Any]) -> list[TranscriptEntry]:
        return [
            TranscriptEntry(seq=int(seq), message=message, usage=usage or None)
            for seq, message, usage in self.db.execute(query).all()
        ]


class CompactionRepository:
    def __init__(self, db: Session) -> None:
        self.db = db

    def latest(self, session_id: str) -> CompactionRecord | None:
        newest = self._records(session_id).order_by(CompactionRow.ordinal.desc()).limit(1)
        row = self.db.scalars(newest).first()
        return compaction_record(row) if row is not None else None

    def get(self, session_id: str, compaction_id: str) -> CompactionRecord | None:
        row = self.db.get(CompactionRow, compaction_id)
        return compaction_record(row) if row is not None and row.session_id == session_id else None

    def add(self, new: NewCompaction, created_at: datetime | None = None) -> CompactionRecord:
        """Records a compaction and counts it on its session. A second record on the same
        base (session, ordinal) raises DuplicateKeyError when the transaction flushes.
        `created_at` is given for a record copied in (fork, import)."""
        row = compaction_row(new, new_id())
        if created_at is not None:
            row.created_at = created_at
        self.db.add(row)
        self.db.flush()
        self.db.execute(
            update(SessionRow)
            .where(SessionRow.id == new.session_id)
            .values(compaction_count=new.ordinal)
        )
        return compaction_record(row)

    def all(self, session_id: str) -> list[CompactionRecord]:
        rows = self.db.scalars(self._records(session_id).order_by(CompactionRow.ordinal)).all()
        return [compaction_record(row) for row in rows]

    @staticmethod
    def _records(session_id: str) -> Select[CompactionRow]:
        return select(CompactionRow).where(CompactionRow.session_id == session_id)


class SessionChangeRepository:
    """Recorded changes of sessions' settings, oldest first."""

    def __init__(self, db: Session) -> None:
        self.db = db

    def add(self, session_id: str, change: SettingsChange) -> None:
        self.db.add(
            SessionChangeRow(
                session_id=session_id,
                changed_by=change.changed_by,
                via=change.via,
                changes={k: dict(v) for k, v in change.changes.items()},
                created_at=change.created_at,
            )
        )
        self.db.flush()

    def all(self, session_id: str) -> list[SettingsChange]:
        rows = self.db.scalars(
            select(SessionChangeRow)
            .where(SessionChangeRow.session_id == session_id)
            .order_by(SessionChangeRow.id)
        ).all()
        return [
            SettingsChange(row.changed_by, row.via, dict(row.changes), aware(row.created_at))
            for row in rows
        ]


class IdempotencyRepository:
    """Idempotency-Keys of appends, kept until they expire (a retention the caller sets)."""

    def __init__(self, db: Session) -> None:
        self.db = db

    def get(self, session_id: str, key: str, not_before: datetime) -> IdempotentAppend | None:
        """The append kept under `key`, unless it was made before `not_before`: an expired
        key is deleted here, so the batch it comes with appends as new."""
        row = self.db.get(IdempotencyKeyRow, (session_id, key))
        row = _unexpired(self.db, row, not_before)
        if row is None:
            return None
        return IdempotentAppend(row.request_hash, AppendResult(**row.response))

    def add(self, session_id: str, key: str, kept: IdempotentAppend) -> None:
        answer = kept.answer
        self.db.add(
            IdempotencyKeyRow(
                session_id=session_id,
                key=key,
                request_hash=kept.request_hash,
                response={
                    "appended": answer.appended,
                    "first_seq": answer.first_seq,
                    "last_seq": answer.last_seq,
                },
            )
        )
        self.db.flush()

    def delete_expired(self, not_before: datetime, limit: int) -> int:
        """Deletes up to `limit` keys made before `not_before`, oldest first; how many
        (concurrent appends never wait on each other's clean-up)."""
        return _delete_expired(self.db, IdempotencyKeyRow, not_before, limit)


class BoundTurnRepository:
    """Turns of proxied requests bound to sessions, kept for the idempotency retention."""

    def __init__(self, db: Session) -> None:
        self.db = db

    def get(self, session_id: str, key: str, not_before: datetime) -> BoundTurn | None:
        """The turn kept under `key`, unless it was bound before `not_before` (then it is
        deleted here: the request counts as new)."""
        row = self.db.get(BoundTurnRow, (session_id, key), populate_existing=True)
        row = _unexpired(self.db, row, not_before)
        if row is None:
            return None
        return BoundTurn(row.key, row.request_hash, int(row.end_seq), _int(row.reply_end_seq))

    def put(self, session_id: str, turn: BoundTurn, now: datetime) -> None:
        """Keeps `turn` under its key (replacing a turn the key named before)."""
        self.db.execute(
            delete(BoundTurnRow).where(
                BoundTurnRow.session_id == session_id, BoundTurnRow.key == turn.key
            )
        )
        self.db.add(BoundTurnRow(session_id=session_id, created_at=now, **asdict(turn)))
        self.db.flush()

    def set_reply(self, session_id: str, key: str, reply_end_seq: int) -> None:
        """Marks the turn's reply recorded (it ends before `reply_end_seq`)."""
        self.db.execute(
            update(BoundTurnRow)
            .where(BoundTurnRow.session_id == session_id, BoundTurnRow.key == key)
            .values(reply_end_seq=reply_end_seq)
        )

    def delete_expired(self, not_before: datetime, limit: int) -> None:
        """Deletes up to `limit` turns bound before `not_before`, oldest first (rows
        another transaction is deleting are skipped)."""
        _delete_expired(self.db, BoundTurnRow, not_before, limit)


def _int(value: int | None) -> int | None:
    return int(value) if value is not None else None


def _before(moment: datetime, not_before: datetime) -> bool:
    return aware(moment) < not_before


_Kept = TypeVar("_Kept", IdempotencyKeyRow, BoundTurnRow)


def _unexpired(db: Session, row: _Kept | None, not_before: datetime) -> _Kept | None:
    """`row` unless it was made before `not_before`; an expired row is deleted here, so
    what it was kept for counts as new (the periodic clean-up may not have reached it)."""
    if row is None:
        return None
    if _before(row.created_at, not_before):
        db.delete(row)
        db.flush()
        return None
    return row


def _delete_expired(db: Session, rows: type[_Kept], not_before: datetime, limit: int) -> int:
    """Deletes up to `limit` rows (keyed by session and key) made before `not_before`,
    oldest first; how many. Rows another transaction is deleting are skipped
    (PostgreSQL SKIP LOCKED): concurrent requests never wait on each other's clean-up."""
    expired = (
        select(rows.session_id, rows.key)
        .where(rows.created_at < not_before)
        .order_by(rows.created_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    done = db.execute(
        delete(rows)
        .where(tuple_(rows.session_id, rows.key).in_(expired))
        .execution_options(synchronize_session=False)
    )
    return int(getattr(done, "rowcount", 0) or 0)
