"""Session use cases behind one facade: the catalog (create, read, list, delete), the
transcript log (append, read back) and the compactor (context, prepare, compact).

Everything handed out is a frozen view (`views.py`), never an ORM row.
"""

from __future__ import annotations

from collections.abc import Sequence
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
from app.services.sessions.catalog import NewSession, SessionCatalog
from app.services.sessions.compactions import (
    DEFAULT_COMPACTION_LEASE,
    CompactResult,
    ContextView,
    SessionCompactor,
)
from app.services.sessions.context import ForwardedPrompt, context_before
from app.services.sessions.transactions import SessionStore
from app.services.sessions.turns import BoundTurnResult, FreshMessages, TurnLog, TurnRequest
from app.services.sessions.views import CompactionRecord, SessionView
from app.store.transactions import SessionDatabase

__all__ = [
    "AppendResult",
    "BoundTurnResult",
    "CompactResult",
    "ContextView",
    "ForwardedPrompt",
    "NewSession",
    "SessionService",
    "TurnRequest",
]


class SessionService:
    def __init__(
        self,
        database: SessionDatabase,
        estimation: EstimationService,
        compaction: CompactionService,
        marker: SummaryMarker | None = None,
        idempotency_retention: timedelta = DEFAULT_IDEMPOTENCY_RETENTION,
        compaction_lease: timedelta = DEFAULT_COMPACTION_LEASE,
    ) -> None:
        self.estimation = estimation
        self.compaction = compaction
        self.marker = marker or SummaryMarker()
        store = SessionStore(database)
        self._store = store
        self._catalog = SessionCatalog(store)
        self._log = TranscriptLog(store, idempotency_retention)
        self._compactor = SessionCompactor(
            store, estimation, compaction, self.marker, compaction_lease
        )
        self._turns = TurnLog(store, self._log, self._compactor.read_context, idempotency_retention)

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

    def bind_turn(
        self, tenant: str, session_id: str, request: TurnRequest, fresh_of: FreshMessages
    ) -> BoundTurnResult:
        """A proxied request's turn: its new messages recorded once, atomically, however
        often the request is retried (SPEC §10)."""
        return self._turns.bind(tenant, session_id, request, fresh_of)

    def record_turn_reply(
        self,
        tenant: str,
        session_id: str,
        key: str | None,
        messages: Sequence[Any],
        usage: dict[int, dict[str, int]],
    ) -> bool:
        """Appends the reply of turn `key` unless one was recorded; True when appended."""
        return self._turns.record_reply(tenant, session_id, key, messages, usage)

    def context_before(self, view: ContextView, end_seq: int) -> ContextView:
        """`view` without the entries from `end_seq` on, counted again."""
        context = context_before(view.context, end_seq)
        if context is view.context:
            return view
        return ContextView(context, self.estimation.count(context.history()))

    def transcript(
        self, tenant: str, session_id: str, offset: int, limit: int
    ) -> tuple[list[Any], int]:
        """The original messages from `offset`, and how many there are in all."""
        return self._log.transcript(tenant, session_id, offset, limit)

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
        wait_seconds: float = 0.0,
    ) -> CompactResult:
        """The before-turn hook: estimate; compact when over the threshold; the context.
        With `wait_seconds`, a compaction of the session already running is waited for."""
        return await self._compactor.prepare(tenant, session_id, caller_gone, prompt, wait_seconds)

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
    ) -> CompactResult:
        """A manual or overflow compaction, regardless of the threshold; 409 if nothing."""
        return await self._compactor.compact(
            tenant, session_id, trigger, instructions, thinking, caller_gone, strategy, prompt
        )
