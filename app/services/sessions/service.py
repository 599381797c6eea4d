"""Session use cases behind one facade: the catalog (create, read, list, delete), the
transcript log (append, read back), the compactor (context, prepare, compact) and the
controls over them (search, revert, fork, settings changes, export and import).

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
from app.services.sessions.bundles import SessionBundles
from app.services.sessions.catalog import NewSession, SessionCatalog
from app.services.sessions.compactions import (
    DEFAULT_COMPACTION_LEASE,
    CompactResult,
    ContextView,
    SessionCompactor,
)
from app.services.sessions.context import ForwardedPrompt, context_before
from app.services.sessions.jobs import DEFAULT_JOB_RETENTION, CompactionJobs, JobOutcome
from app.services.sessions.revisions import RevertResult, SessionRevisions
from app.services.sessions.search import SearchResult, TranscriptSearch
from app.services.sessions.settings_changes import SessionSettingsEditor
from app.services.sessions.transactions import SessionStore
from app.services.sessions.turns import BoundTurnResult, TurnLog, TurnRequest
from app.store.transactions import SessionDatabase

__all__ = [
    "AppendResult",
    "BoundTurnResult",
    "CompactResult",
    "ContextView",
    "ForwardedPrompt",
    "JobOutcome",
    "NewSession",
    "RevertResult",
    "SearchResult",
    "SessionService",
    "TurnRequest",
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
        compaction_lease: timedelta = DEFAULT_COMPACTION_LEASE,
        ledger: CostLedger | None = None,
        job_retention: timedelta = DEFAULT_JOB_RETENTION,
    ) -> None:
        self.estimation = estimation
        self.compaction = compaction
        self.marker = marker or SummaryMarker()
        store = SessionStore(database)
        catalog = SessionCatalog(store)
        log = TranscriptLog(store, idempotency_retention)
        compactor = SessionCompactor(store, estimation, compaction, self.marker, compaction_lease)
        self.compactor = compactor
        # The cost ledger of this store (SPEC §15): summary calls are billed with the
        # compaction they made; `app.composition` gives it its observer.
        self.ledger = ledger or CostLedger(store, estimation.models)
        compactor.ledger = self.ledger
        # Compactions asked for asynchronously (SPEC §16); their tasks live while the
        # lifespan runs `async with service.jobs` (app.composition).
        self.jobs = CompactionJobs(store, compactor, job_retention, compaction_lease)
        turns = TurnLog(store, log, compactor.read_context, idempotency_retention)
        search = TranscriptSearch(store)
        revisions = SessionRevisions(store, estimation, self.marker)
        settings = SessionSettingsEditor(store)
        bundles = SessionBundles(store)
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
        # A proxied request's turn (SPEC §10): its new messages recorded once, atomically,
        # however often the request is retried; its reply recorded once (True if now).
        self.bind_turn = turns.bind
        self.record_turn_reply = turns.record_reply
        # The compactor: every compaction record, oldest first; the context to send now
        # with its estimate; the before-turn hook (compact when over the threshold; with
        # `wait_seconds`, a compaction already running is waited for); a manual or
        # overflow compaction regardless of the threshold (409 if nothing).
        # Both take `dry_run` (what would happen, writing nothing).
        self.compactions = compactor.compactions
        self.context = compactor.context
        self.prepare = compactor.prepare
        self.compact = compactor.compact
        # The same compaction as a job in the background (`Prefer: respond-async`): a
        # new queued job at once; later, its state, progress and record.
        self.start_compaction_job = self.jobs.start
        self.compaction_job = self.jobs.get
        # A bound proxied turn as a dry run: its context, and what prepare would do.
        self.preview_turn = compactor.preview_turn
        # Full-text search over the transcript, folded entries included, best first.
        self.search = search.search
        # Revert: the context before a compaction again, as a new `revert` record.
        # Fork: a new session from entries up to a sequence, sharing nothing mutable.
        self.revert = revisions.revert
        self.fork = revisions.fork
        # Settings changes: applied to the session and recorded (who, when, what).
        self.update_settings = settings.update
        self.settings_changes = settings.changes
        # Export (a JSON Lines bundle, a line at a time) and import (all or nothing).
        self.export = bundles.export
        self.import_bundle = bundles.import_bundle

    def context_before(self, view: ContextView, end_seq: int) -> ContextView:
        """`view` without the entries from `end_seq` on, counted again."""
        context = context_before(view.context, end_seq)
        if context is view.context:
            return view
        return ContextView(context, self.estimation.count(context.history()))
