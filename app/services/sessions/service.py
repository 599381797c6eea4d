"""Session use cases: create, append, read, build context, prepare and compact.

Database work runs in short synchronous transactions (in a worker thread when called
from async code); the summarizer call happens between them, holding no transaction. A
compaction records the base it was built on; if another one committed first, the unique
(session, ordinal) constraint refuses the second and it answers 409. A failure anywhere
writes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import anyio
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from app.engine.compaction.marker import SummaryMarker
from app.engine.errors import (
    IneffectiveCompactionError,
    InvalidHistoryError,
    NothingToCompactError,
)
from app.engine.ports import CallerGone
from app.engine.thinking import ThinkingLevel
from app.formats.registry import FORMATS
from app.services.clearing import clear_settings_from, clearing_due
from app.services.compaction import CompactionOutcome, CompactionService
from app.services.estimation import CountedHistory, EstimationService
from app.services.format_mismatch import mismatch_error
from app.services.history import CompactOptions
from app.services.json_bytes import json_bytes
from app.services.sessions.context import (
    SessionContext,
    build_context,
    session_format,
)
from app.services.sessions.errors import (
    CompactionConflictError,
    IdempotencyMismatchError,
    SessionNotFoundError,
)
from app.services.sessions.records import record_fields
from app.services.sessions.stall import stall_of, waits_for_new_entries
from app.services.sessions.store_errors import store_error
from app.store.models import CompactionRow, IdempotencyKeyRow, SessionRow
from app.store.repositories import (
    CompactionRepository,
    IdempotencyRepository,
    SessionRepository,
    TranscriptRepository,
    new_id,
)

T = TypeVar("T")
SESSION_SETTING_KEYS = (
    "context_window",
    "reserve_tokens",
    "trigger_tokens",
    "keep_recent_tokens",
    "thinking",
    "strategy",
    "clear",
    "pinned",
)


@dataclass(frozen=True, slots=True)
class AppendResult:
    appended: int
    first_seq: int | None
    last_seq: int | None


@dataclass(frozen=True, slots=True)
class ContextView:
    context: SessionContext
    counted: CountedHistory


@dataclass(frozen=True, slots=True)
class CompactResult:
    compacted: bool
    record: CompactionRow | None
    view: ContextView
    reason: str | None = None
    outcome: CompactionOutcome | None = None
    # Automatic compaction could not bring the context under the threshold.
    ineffective: bool = False
    warning: str | None = None


class SessionService:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        estimation: EstimationService,
        compaction: CompactionService,
        marker: SummaryMarker | None = None,
    ) -> None:
        self._sessions = sessions
        self.estimation = estimation
        self.compaction = compaction
        self.marker = marker or SummaryMarker()

    @contextmanager
    def _transaction(self) -> Iterator[Session]:
        try:
            with self._sessions.begin() as db:
                yield db
        except DBAPIError as exc:
            translated = store_error(exc)
            if translated is None:
                raise
            raise translated from exc

    def _require(self, db: Session, tenant: str, session_id: str) -> SessionRow:
        row = SessionRepository(db).get(session_id, tenant)
        if row is None:
            raise SessionNotFoundError(f"session {session_id} not found")
        return row

    def check_database(self) -> str | None:
        """None when the store answers and its tables exist, else what is wrong."""
        try:
            with self._sessions() as db:
                SessionRepository(db).ping()
        except SQLAlchemyError as exc:
            return str(getattr(exc, "orig", None) or exc).splitlines()[0]
        return None

    # -- sessions -----------------------------------------------------------------------

    def create(self, tenant: str, data: dict[str, Any]) -> SessionRow:
        """A new, empty session with its settings."""
        fmt = data.get("format")
        if fmt is not None:
            FORMATS.get(fmt)  # an unknown name is refused before anything is written
        settings = {k: data.get(k) for k in SESSION_SETTING_KEYS if data.get(k) is not None}
        row = SessionRow(
            id=new_id(),
            tenant=tenant,
            model=data.get("model"),
            format=fmt,
            system=data.get("system"),
            tools=list(data.get("tools") or []),
            settings=settings,
            meta=dict(data.get("metadata") or {}),
            entry_count=0,
            compaction_count=0,
            system_prefix_count=0,
        )
        with self._transaction() as db:
            return SessionRepository(db).add(row)

    def get(self, tenant: str, session_id: str) -> SessionRow:
        with self._transaction() as db:
            return self._require(db, tenant, session_id)

    def list_for_tenant(self, tenant: str, offset: int, limit: int) -> tuple[list[SessionRow], int]:
        with self._transaction() as db:
            return SessionRepository(db).list_for_tenant(tenant, offset, limit)

    def delete(self, tenant: str, session_id: str) -> None:
        with self._transaction() as db:
            self._require(db, tenant, session_id)
            SessionRepository(db).delete(session_id)

    # -- transcript ---------------------------------------------------------------------

    def append(
        self,
        tenant: str,
        session_id: str,
        messages: Sequence[Any],
        usage: dict[int, dict[str, int]],
        idempotency_key: str | None = None,
    ) -> AppendResult:
        """Appends messages (validated in the session's format), atomically numbered."""
        request_hash = hashlib.sha256(json_bytes([messages, sorted(usage.items())])).hexdigest()
        try:
            with self._transaction() as db:
                return self._append(
                    db, tenant, session_id, messages, usage, idempotency_key, request_hash
                )
        except IntegrityError:
            # A concurrent request with the same key won the race: answer as it did.
            if idempotency_key is None:
                raise
            with self._transaction() as db:
                replay = self._replay(db, session_id, idempotency_key, request_hash)
                if replay is None:
                    raise
                return replay

    def _append(
        self,
        db: Session,
        tenant: str,
        session_id: str,
        messages: Sequence[Any],
        usage: dict[int, dict[str, int]],
        idempotency_key: str | None,
        request_hash: str,
    ) -> AppendResult:
        # Locked: the format and system prefix decided below must see every earlier append.
        row = SessionRepository(db).lock(session_id, tenant)
        if row is None:
            raise SessionNotFoundError(f"session {session_id} not found")
        if idempotency_key is not None:
            replay = self._replay(db, session_id, idempotency_key, request_hash)
            if replay is not None:
                return replay
        for index in usage:
            if not 0 <= index < len(messages):
                raise InvalidHistoryError(
                    f"usage: message_index {index} is outside this batch of {len(messages)}",
                    where="usage",
                )
        fmt = session_format(row, messages)
        # Undecided (None) means valid in every format; the default parser checks it again.
        parser = FORMATS.get(fmt) if fmt else FORMATS.default
        try:
            for i, message in enumerate(messages):
                parser.parse_message(message, f"messages[{i}]")
        except InvalidHistoryError as exc:
            if row.format is None:
                raise
            claim = f"this session is in {parser.name} format"
            raise mismatch_error(exc, parser, messages, claim) from exc
        if row.format is None and fmt is not None:
            row.format = fmt
        result = AppendResult(appended=0, first_seq=None, last_seq=None)
        if messages:
            sessions = SessionRepository(db)
            try:
                first = sessions.reserve_seqs(session_id, len(messages))
            except LookupError:
                raise SessionNotFoundError(f"session {session_id} not found") from None
            # Leading system messages extend the prefix only while nothing else came yet
            # (an undecided batch is plain user/assistant text and adds none).
            if first == row.system_prefix_count and fmt is not None:
                row.system_prefix_count += parser.leading_system_count(messages)
            TranscriptRepository(db).append(session_id, first, messages, usage)
            result = AppendResult(len(messages), first, first + len(messages) - 1)
        if idempotency_key is not None:
            IdempotencyRepository(db).add(
                IdempotencyKeyRow(
                    session_id=session_id,
                    key=idempotency_key,
                    request_hash=request_hash,
                    response={
                        "appended": result.appended,
                        "first_seq": result.first_seq,
                        "last_seq": result.last_seq,
                    },
                )
            )
        return result

    @staticmethod
    def _replay(db: Session, session_id: str, key: str, request_hash: str) -> AppendResult | None:
        stored = IdempotencyRepository(db).get(session_id, key)
        if stored is None:
            return None
        if stored.request_hash != request_hash:
            raise IdempotencyMismatchError(
                f"Idempotency-Key {key!r} was already used with a different body; "
                "use a new key for a new batch"
            )
        return AppendResult(**stored.response)

    def transcript(
        self, tenant: str, session_id: str, offset: int, limit: int
    ) -> tuple[list[Any], int]:
        with self._transaction() as db:
            row = self._require(db, tenant, session_id)
            entries = TranscriptRepository(db).page(session_id, offset, limit)
            return [e.message for e in entries], row.entry_count

    def compactions(self, tenant: str, session_id: str) -> list[CompactionRow]:
        with self._transaction() as db:
            self._require(db, tenant, session_id)
            return CompactionRepository(db).all(session_id)

    # -- context, prepare, compact --------------------------------------------------------

    def _load_context(self, tenant: str, session_id: str) -> SessionContext:
        with self._transaction() as db:
            row = self._require(db, tenant, session_id)
            latest = CompactionRepository(db).latest(session_id)
            transcript = TranscriptRepository(db)
            prefix = transcript.page(session_id, 0, row.system_prefix_count)
            kept = transcript.from_seq(
                session_id, latest.first_kept_seq if latest is not None else 0
            )
            return build_context(row, latest, prefix, kept, self.marker)

    def context(self, tenant: str, session_id: str) -> ContextView:
        """The context to send now, with its estimate."""
        context = self._load_context(tenant, session_id)
        return ContextView(context, self.estimation.count(context.history()))

    async def prepare(
        self, tenant: str, session_id: str, caller_gone: CallerGone = lambda: False
    ) -> CompactResult:
        """The before-turn hook: estimate; compact when over the threshold; the context.

        When compaction cannot bring the context under the threshold, the answer says so
        and automatic compaction pauses until new entries arrive (no call on every turn).
        """
        view = await _in_thread(self.context, tenant, session_id)
        session = view.context.session
        if not view.counted.should_compact and not clearing_due(view.counted, session.settings):
            return CompactResult(compacted=False, record=None, view=view, reason="under threshold")
        entry_count = session.entry_count
        if waits_for_new_entries(session.compaction_stall, entry_count):
            warning = stall_of(view.context, view.counted, entry_count).warning
            return CompactResult(
                compacted=False,
                record=None,
                view=view,
                reason="automatic compaction paused until new messages arrive",
                ineffective=True,
                warning=warning,
            )
        try:
            result = await self._compact(view.context, "auto", None, None, caller_gone, force=False)
        except IneffectiveCompactionError as exc:
            result = CompactResult(compacted=False, record=None, view=view, reason=str(exc))
        if result.view.counted.should_compact:
            stall = stall_of(result.view.context, result.view.counted, entry_count)
            await _in_thread(self._set_stall, session, stall.to_json())
            return replace(result, ineffective=True, warning=stall.warning)
        if session.compaction_stall is not None:
            await _in_thread(self._set_stall, session, None)
        return result

    def _set_stall(self, session: SessionRow, stall: dict[str, Any] | None) -> None:
        with self._transaction() as db:
            self._require(db, session.tenant, session.id).compaction_stall = stall

    async def compact(
        self,
        tenant: str,
        session_id: str,
        trigger: str,
        instructions: str | None,
        thinking: ThinkingLevel | None,
        caller_gone: CallerGone = lambda: False,
        strategy: str | None = None,
    ) -> CompactResult:
        """A manual or overflow compaction, regardless of the threshold; 409 if nothing."""
        context = await _in_thread(self._load_context, tenant, session_id)
        result = await self._compact(
            context, trigger, instructions, thinking, caller_gone, force=True, strategy=strategy
        )
        if not result.compacted:
            raise NothingToCompactError(result.reason or "nothing to compact")
        return result

    async def _compact(
        self,
        context: SessionContext,
        trigger: str,
        instructions: str | None,
        thinking: ThinkingLevel | None,
        caller_gone: CallerGone,
        *,
        force: bool,
        strategy: str | None = None,
    ) -> CompactResult:
        session = context.session
        settings = session.settings or {}
        default_thinking = settings.get("thinking")
        options = CompactOptions(
            force=force,
            trigger=trigger,
            instructions=instructions,
            thinking=thinking or (ThinkingLevel(default_thinking) if default_thinking else None),
            strategy=strategy or settings.get("strategy") or "summarize",
            clear=clear_settings_from(settings.get("clear")),
            pinned=tuple(settings.get("pinned") or ()),
        )
        outcome = await self.compaction.compact(context.history(), options, caller_gone)
        if not outcome.compacted:
            view = ContextView(context, outcome.counted)
            return CompactResult(compacted=False, record=None, view=view, reason=outcome.reason)
        record = await _in_thread(self._record, context, outcome, trigger, instructions)
        view = await _in_thread(self.context, session.tenant, session.id)
        return CompactResult(compacted=True, record=record, view=view, outcome=outcome)

    def _record(
        self,
        context: SessionContext,
        outcome: CompactionOutcome,
        trigger: str,
        instructions: str | None,
    ) -> CompactionRow:
        latest = context.latest
        row = CompactionRow(
            id=new_id(),
            session_id=context.session.id,
            ordinal=(latest.ordinal + 1) if latest is not None else 1,
            covered_seq=max(s for s in context.seqs if s is not None) + 1,
            tokens_before=outcome.tokens_before,
            tokens_after=outcome.tokens_after or 0,
            trigger=trigger,
            instructions=instructions,
            previous_id=latest.id if latest is not None else None,
            **record_fields(context, outcome),
        )
        try:
            with self._transaction() as db:
                current = self._require(db, context.session.tenant, context.session.id)
                CompactionRepository(db).add(row)
                current.compaction_count = row.ordinal
        except IntegrityError as exc:
            raise CompactionConflictError(
                "another compaction of this session finished first from the same history; "
                "fetch the context again and retry if still needed"
            ) from exc
        return row


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    return await anyio.to_thread.run_sync(fn, *args)
