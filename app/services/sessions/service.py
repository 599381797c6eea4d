"""Session use cases behind one facade: the catalog (create, read, list, delete), the
transcript log (append, read back) and the compactor (context, prepare, compact).

Everything handed out is a frozen view (`views.py`), never an ORM row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.strategy import StrategyName
from app.engine.ports import CallerGone
from app.engine.thinking import ThinkingLevel
from app.services.compaction import CompactionService
from app.services.estimation import EstimationService
from app.services.sessions.appends import (
    DEFAULT_IDEMPOTENCY_RETENTION,
    AppendResult,
    TranscriptLog,
)
from app.services.sessions.bundles import SessionBundles
from app.services.sessions.catalog import NewSession, SessionCatalog
from app.services.sessions.compactions import CompactResult, ContextView, SessionCompactor
from app.services.sessions.context import ForwardedPrompt
from app.services.sessions.revisions import RevertResult, SessionRevisions
from app.services.sessions.search import SearchResult, TranscriptSearch
from app.services.sessions.settings_changes import SessionSettingsEditor
from app.services.sessions.transactions import SessionStore
from app.services.sessions.views import CompactionRecord, SessionView, SettingsChange
from app.store.transactions import SessionDatabase

__all__ = [
    "AppendResult",
    "CompactResult",
    "ContextView",
    "ForwardedPrompt",
    "NewSession",
    "RevertResult",
    "SearchResult",
    "SessionService",
]


class SessionService:
    def __init__(
        self,
        database: SessionDatabase,
        estimation: EstimationService,
        compaction: CompactionService,
        marker: SummaryMarker | None = None,
        idempotency_retention: timedelta = DEFAULT_IDEMPOTENCY_RETENTION,
    ) -> None:
        self.estimation = estimation
        self.compaction = compaction
        self.marker = marker or SummaryMarker()
        store = SessionStore(database)
        self._store = store
        self._catalog = SessionCatalog(store)
        self._log = TranscriptLog(store, idempotency_retention)
        self._compactor = SessionCompactor(store, estimation, compaction, self.marker)
        self._search = TranscriptSearch(store)
        self._revisions = SessionRevisions(store, estimation, self.marker)
        self._settings = SessionSettingsEditor(store)
        self._bundles = SessionBundles(store)

    def check_database(self) -> str | None:
        """None when the store answers and its tables exist, else what is wrong."""
        return self._store.check_database()

    def create(self, tenant: str, new: NewSession) -> SessionView:
        """A new, empty session with its settings."""
        return self._catalog.create(tenant, new)

    def get(self, tenant: str, session_id: str) -> SessionView:
        return self._catalog.get(tenant, session_id)

    def list_for_tenant(
        self, tenant: str, offset: int, limit: int
    ) -> tuple[list[SessionView], int]:
        """The tenant's sessions, newest first, and how many there are."""
        return self._catalog.list_for_tenant(tenant, offset, limit)

    def delete(self, tenant: str, session_id: str) -> None:
        self._catalog.delete(tenant, session_id)

    def append(
        self,
        tenant: str,
        session_id: str,
        messages: Sequence[Any],
        usage: dict[int, dict[str, int]],
        idempotency_key: str | None = None,
    ) -> AppendResult:
        """Appends messages (validated in the session's format), atomically numbered."""
        return self._log.append(tenant, session_id, messages, usage, idempotency_key)

    def transcript(
        self, tenant: str, session_id: str, offset: int, limit: int
    ) -> tuple[list[Any], int]:
        """The original messages from `offset`, and how many there are in all."""
        return self._log.transcript(tenant, session_id, offset, limit)

    def search(
        self, tenant: str, session_id: str, q: str, limit: int = 10, folded_only: bool = False
    ) -> SearchResult:
        """Transcript entries matching `q`, folded ones included, best first."""
        return self._search.search(tenant, session_id, q, limit, folded_only)

    def compactions(self, tenant: str, session_id: str) -> list[CompactionRecord]:
        """Every compaction record of the session, oldest first."""
        return self._compactor.compactions(tenant, session_id)

    def context(
        self, tenant: str, session_id: str, prompt: ForwardedPrompt | None = None
    ) -> ContextView:
        """The context to send now, with its estimate."""
        return self._compactor.context(tenant, session_id, prompt)

    async def prepare(
        self,
        tenant: str,
        session_id: str,
        caller_gone: CallerGone = lambda: False,
        prompt: ForwardedPrompt | None = None,
        *,
        dry_run: bool = False,
    ) -> CompactResult:
        """The before-turn hook: estimate; compact when over the threshold; the context.
        With `dry_run`: what would happen, writing nothing."""
        return await self._compactor.prepare(
            tenant, session_id, caller_gone, prompt, dry_run=dry_run
        )

    async def compact(
        self,
        tenant: str,
        session_id: str,
        trigger: str,
        instructions: str | None,
        thinking: ThinkingLevel | None,
        caller_gone: CallerGone = lambda: False,
        strategy: StrategyName | None = None,
        prompt: ForwardedPrompt | None = None,
        *,
        dry_run: bool = False,
    ) -> CompactResult:
        """A manual or overflow compaction, regardless of the threshold; 409 if nothing.
        With `dry_run`: the record it would write, writing nothing."""
        return await self._compactor.compact(
            tenant,
            session_id,
            trigger,
            instructions,
            thinking,
            caller_gone,
            strategy,
            prompt,
            dry_run=dry_run,
        )

    def revert(self, tenant: str, session_id: str, compaction_id: str) -> RevertResult:
        """The context before `compaction_id` again, as a new `revert` record."""
        return self._revisions.revert(tenant, session_id, compaction_id)

    def fork(self, tenant: str, session_id: str, at_seq: int) -> SessionView:
        """A new session from entries 0..`at_seq` of this one, sharing nothing mutable."""
        return self._revisions.fork(tenant, session_id, at_seq)

    def update_settings(
        self,
        tenant: str,
        session_id: str,
        values: Mapping[str, Any],
        changed_by: str,
        via: str = "api",
    ) -> SessionView:
        """Changes the model and compaction settings; the change is recorded."""
        return self._settings.update(tenant, session_id, values, changed_by, via)

    def settings_changes(self, tenant: str, session_id: str) -> list[SettingsChange]:
        """Every recorded settings change, oldest first."""
        return self._settings.changes(tenant, session_id)

    def export(self, tenant: str, session_id: str) -> Iterator[bytes]:
        """The session's JSON Lines bundle, a line at a time."""
        return self._bundles.export(tenant, session_id)

    def import_bundle(self, tenant: str, lines: Iterable[bytes]) -> SessionView:
        """A new session restored from a bundle; nothing written unless it all checks out."""
        return self._bundles.import_bundle(tenant, lines)
