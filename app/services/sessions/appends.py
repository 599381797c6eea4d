"""Appending to a session's transcript, and reading it back.

Entries are append-only and numbered atomically; an `Idempotency-Key` makes a retried
batch append nothing and answer as the first time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.engine.errors import InvalidHistoryError
from app.formats.registry import FORMATS
from app.services.format_mismatch import mismatch_error
from app.services.json_bytes import json_bytes
from app.services.sessions.context import session_format
from app.services.sessions.errors import IdempotencyMismatchError, SessionNotFoundError
from app.services.sessions.transactions import SessionStore
from app.store.models import IdempotencyKeyRow
from app.store.repositories import (
    IdempotencyRepository,
    SessionRepository,
    TranscriptRepository,
)


@dataclass(frozen=True, slots=True)
class AppendResult:
    appended: int
    first_seq: int | None
    last_seq: int | None


class TranscriptLog:
    def __init__(self, store: SessionStore) -> None:
        self._store = store

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
            with self._store.transaction() as db:
                return self._append(
                    db, tenant, session_id, messages, usage, idempotency_key, request_hash
                )
        except IntegrityError:
            # A concurrent request with the same key won the race: answer as it did.
            if idempotency_key is None:
                raise
            with self._store.transaction() as db:
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
        fmt = session_format(row.format, messages)
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
        """The original messages from `offset`, and how many there are in all."""
        with self._store.transaction() as db:
            row = self._store.require(db, tenant, session_id)
            entries = TranscriptRepository(db).page(session_id, offset, limit)
            return [e.message for e in entries], row.entry_count
