"""Short transactions on the session store, each with its repositories, and the one
place where the database library's errors become the store's own (`app.store.errors`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from app.store.compaction_jobs import CompactionJobRepository
from app.store.cost_ledger import CostLedgerRepository
from app.store.errors import first_line, store_error
from app.store.repositories import (
    BoundTurnRepository,
    CompactionRepository,
    IdempotencyRepository,
    SessionChangeRepository,
    SessionRepository,
    TranscriptRepository,
)
from app.store.search import SearchRepository
from app.store.ui_logins import UiLoginRepository


@dataclass(frozen=True, slots=True)
class StoreTransaction:
    """The repositories of one transaction: they flush, the block commits."""

    sessions: SessionRepository
    transcript: TranscriptRepository
    compactions: CompactionRepository
    idempotency: IdempotencyRepository
    ui_logins: UiLoginRepository
    bound_turns: BoundTurnRepository
    search: SearchRepository
    changes: SessionChangeRepository
    ledger: CostLedgerRepository
    jobs: CompactionJobRepository

    @classmethod
    def on(cls, db: Session) -> StoreTransaction:
        return cls(
            SessionRepository(db),
            TranscriptRepository(db),
            CompactionRepository(db),
            IdempotencyRepository(db),
            UiLoginRepository(db),
            BoundTurnRepository(db),
            SearchRepository(db),
            SessionChangeRepository(db),
            CostLedgerRepository(db),
            CompactionJobRepository(db),
        )


class SessionDatabase:
    """Opens transactions: commits at the end of the block, rolls back on any error, and
    raises StoreError (a subclass saying what failed) for a failure of the database."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    @contextmanager
    def transaction(self) -> Iterator[StoreTransaction]:
        try:
            with self._sessions.begin() as db:
                yield StoreTransaction.on(db)
        except SQLAlchemyError as exc:
            raise store_error(exc) from exc

    def check(self) -> str | None:
        """None when the store answers and its tables exist, else what is wrong."""
        try:
            with self._sessions() as db:
                SessionRepository(db).ping()
        except SQLAlchemyError as exc:
            return first_line(exc)
        return None
