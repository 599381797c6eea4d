"""Appending to a session's transcript, and reading it back.

Entries are append-only and numbered atomically; an `Idempotency-Key` makes a retried
batch append nothing and answer as the first time, for as long as the key is kept (the
retention, `COMPACTOR_IDEMPOTENCY_RETENTION_HOURS`); after that the key is forgotten and
the same batch appends again. Expired keys are deleted a bounded batch at a time by the
appends that bring a key, so the table holds about one retention's worth of keys.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from app.engine.errors import InvalidHistoryError
from app.formats.registry import FORMATS
from app.services.format_mismatch import mismatch_error
from app.services.json_bytes import json_bytes
from app.services.sessions.context import session_format
from app.services.sessions.errors import IdempotencyMismatchError, SessionNotFoundError
from app.services.sessions.indexing import LOOK_BACK_ENTRIES, batch_texts
from app.services.sessions.transactions import SessionStore
from app.store.errors import DuplicateKeyError, RowGoneError
from app.store.transactions import StoreTransaction
from app.store.views import AppendResult, IdempotentAppend

__all__ = ["DEFAULT_IDEMPOTENCY_RETENTION", "AppendResult", "TranscriptLog"]

DEFAULT_IDEMPOTENCY_RETENTION = timedelta(hours=24)
# Expired keys one append deletes at most: the clean-up stays a small, indexed delete.
EXPIRED_KEYS_PER_APPEND = 100


def _utcnow() -> datetime:
    return datetime.now(UTC)


class TranscriptLog:
    def __init__(
        self,
        store: SessionStore,
        idempotency_retention: timedelta = DEFAULT_IDEMPOTENCY_RETENTION,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self._store = store
        self._retention = idempotency_retention
        self._clock = clock

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
        not_before = self._clock() - self._retention
        try:
            with self._store.transaction() as tx:
                return self._append(
                    tx,
                    tenant,
                    session_id,
                    messages,
                    usage,
                    idempotency_key,
                    request_hash,
                    not_before,
                )
        except DuplicateKeyError:
            # A concurrent request with the same key won the race: answer as it did.
            if idempotency_key is None:
                raise
            with self._store.transaction() as tx:
                replay = self._replay(tx, session_id, idempotency_key, request_hash, not_before)
                if replay is None:
                    raise
                return replay

    def append_in(
        self,
        tx: StoreTransaction,
        tenant: str,
        session_id: str,
        messages: Sequence[Any],
        usage: dict[int, dict[str, int]],
    ) -> AppendResult:
        """Appends within `tx` (a caller that decides more in the same transaction)."""
        not_before = self._clock() - self._retention
        return self._append(tx, tenant, session_id, messages, usage, None, "", not_before)

    def _append(
        self,
        tx: StoreTransaction,
        tenant: str,
        session_id: str,
        messages: Sequence[Any],
        usage: dict[int, dict[str, int]],
        idempotency_key: str | None,
        request_hash: str,
        not_before: datetime,
    ) -> AppendResult:
        # Locked: the format and system prefix decided below must see every earlier append.
        session = tx.sessions.lock(session_id, tenant)
        if session is None:
            raise SessionNotFoundError(f"session {session_id} not found")
        if idempotency_key is not None:
            replay = self._replay(tx, session_id, idempotency_key, request_hash, not_before)
            if replay is not None:
                return replay
        for index in usage:
            if not 0 <= index < len(messages):
                raise InvalidHistoryError(
                    f"usage: message_index {index} is outside this batch of {len(messages)}",
                    where="usage",
                )
        fmt = session_format(session.format, messages)
        # Undecided (None) means valid in every format; the default parser checks it again.
        parser = FORMATS.get(fmt) if fmt else FORMATS.default
        try:
            parsed = [parser.parse_message(m, f"messages[{i}]") for i, m in enumerate(messages)]
        except InvalidHistoryError as exc:
            if session.format is None:
                raise
            claim = f"this session is in {parser.name} format"
            raise mismatch_error(exc, parser, messages, claim) from exc
        if session.format is None and fmt is not None:
            tx.sessions.set_format(session_id, fmt)
        result = AppendResult(appended=0, first_seq=None, last_seq=None)
        if messages:
            try:
                first = tx.sessions.reserve_seqs(session_id, len(messages))
            except RowGoneError:
                raise SessionNotFoundError(f"session {session_id} not found") from None
            # Leading system messages extend the prefix only while nothing else came yet
            # (an undecided batch is plain user/assistant text and adds none).
            if first == session.system_prefix_count and fmt is not None:
                leading = parser.leading_system_count(messages)
                if leading:
                    tx.sessions.extend_system_prefix(session_id, leading)
            texts = batch_texts(
                parser,
                messages,
                parsed,
                lambda: [
                    e.message
                    for e in tx.transcript.page(
                        session_id, max(0, first - LOOK_BACK_ENTRIES), min(first, LOOK_BACK_ENTRIES)
                    )
                ],
            )
            tx.transcript.append(session_id, first, messages, usage, texts)
            result = AppendResult(len(messages), first, first + len(messages) - 1)
        if idempotency_key is not None:
            tx.idempotency.add(session_id, idempotency_key, IdempotentAppend(request_hash, result))
            tx.idempotency.delete_expired(not_before, EXPIRED_KEYS_PER_APPEND)
        return result

    @staticmethod
    def _replay(
        tx: StoreTransaction, session_id: str, key: str, request_hash: str, not_before: datetime
    ) -> AppendResult | None:
        stored = tx.idempotency.get(session_id, key, not_before)
        if stored is None:
            return None
        if stored.request_hash != request_hash:
            raise IdempotencyMismatchError(
                f"Idempotency-Key {key!r} was already used with a different body; "
                "use a new key for a new batch"
            )
        return stored.answer

    def transcript(
        self, tenant: str, session_id: str, offset: int, limit: int
    ) -> tuple[list[Any], int]:
        """The original messages from `offset`, and how many there are in all."""
        with self._store.transaction() as tx:
            session = self._store.require(tx, tenant, session_id)
            entries = tx.transcript.page(session_id, offset, limit)
            return [e.message for e in entries], session.entry_count
