"""Session use cases behind one facade: the catalog (create, read, list, delete), the
transcript log (append, read back) and the compactor (context, prepare, compact).

Everything handed out is a frozen view (`views.py`), never an ORM row.
"""

from __future__ import annotations

from datetime import timedelta

from app.engine.compaction.marker import SummaryMarker
from app.services.compaction import CompactionService
from app.services.cost_ledger import CostLedger
from app.services.estimation import EstimationService
from app.services.sessions.appends import (
    DEFAULT_IDEMPOTENCY_RETENTION,
    AppendResult,
    TranscriptLog,
)
from app.services.sessions.catalog import NewSession, SessionCatalog
from app.services.sessions.compactions import CompactResult, ContextView, SessionCompactor
from app.services.sessions.context import ForwardedPrompt
from app.services.sessions.transactions import SessionStore
from app.store.transactions import SessionDatabase

__all__ = [
    "AppendResult",
    "CompactResult",
    "ContextView",
    "ForwardedPrompt",
    "NewSession",
    "SessionService",
]


class SessionService:
    """The facade: its operations are its parts' own (one signature each, no restating)."""

    def __init__(
        self,
        database: SessionDatabase,
        estimation: EstimationService,
        compaction: CompactionService,
        marker: SummaryMarker | None = None,
        idempotency_retention: timedelta = DEFAULT_IDEMPOTENCY_RETENTION,
        ledger: CostLedger | None = None,
    ) -> None:
        self.estimation = estimation
        self.compaction = compaction
        self.marker = marker or SummaryMarker()
        store = SessionStore(database)
        catalog = SessionCatalog(store)
        log = TranscriptLog(store, idempotency_retention)
        compactor = SessionCompactor(store, estimation, compaction, self.marker)
        self.compactor = compactor
        # The cost ledger of this store (SPEC §15): summary calls are billed with the
        # compaction they made; `app.composition` gives it its observer.
        self.ledger = ledger or CostLedger(store, estimation.models)
        compactor.ledger = self.ledger
        # None when the store answers and its tables exist, else what is wrong.
        self.check_database = store.check_database
        # The catalog: a new, empty session with its settings; one; a page of the
        # tenant's, newest first, with how many there are; deleting one.
        self.create = catalog.create
        self.get = catalog.get
        self.list_for_tenant = catalog.list_for_tenant
        self.delete = catalog.delete
        # The transcript log: appends (validated in the session's format, atomically
        # numbered, idempotent by key); the originals from an offset, with the total.
        self.append = log.append
        self.transcript = log.transcript
        # The compactor: every compaction record, oldest first; the context to send now
        # with its estimate; the before-turn hook (compact when over the threshold); a
        # manual or overflow compaction regardless of the threshold (409 if nothing).
        self.compactions = compactor.compactions
        self.context = compactor.context
        self.prepare = compactor.prepare
        self.compact = compactor.compact
