"""Turns of proxied requests bound to a session (SPEC §10): binding is atomic and
idempotent.

A bound request is one turn: its new messages are recorded and the turn is kept under
the request's key (its `Idempotency-Key`, else its body), all in one transaction on the
locked session. A retry of the same request — while the first is still in flight, or
after — finds the turn and records nothing; it forwards the context as the turn left it.
Of the replies to one turn, the first to finish is recorded, the others are not.

A body names only the session's latest turn: a caller that sends just its new message
may send the same words again as a new turn once something else was recorded (a key
names its turn for the whole retention).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from app.services.sessions.appends import TranscriptLog
from app.services.sessions.context import SessionContext
from app.services.sessions.errors import IdempotencyMismatchError, SessionNotFoundError
from app.services.sessions.transactions import SessionStore
from app.store.transactions import StoreTransaction
from app.store.views import BoundTurn, SessionView

# Expired turns one binding deletes at most (as appends do with their keys).
EXPIRED_TURNS_PER_BIND = 100

# The messages to record for a turn, given the session's context messages.
FreshMessages = Callable[[list[Any]], list[Any]]
ContextReader = Callable[[StoreTransaction, SessionView], SessionContext]


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What identifies one bound request."""

    # Hash of the request's Idempotency-Key, or of its body.
    key: str
    # Hash of the history it came with (a key reused for other messages is refused).
    request_hash: str
    # The key is the body's: it names only the session's latest turn.
    by_body: bool


@dataclass(frozen=True, slots=True)
class BoundTurnResult:
    """The turn a request is: where its messages end, and whether it was bound before."""

    key: str
    end_seq: int
    replayed: bool


def _utcnow() -> datetime:
    return datetime.now(UTC)


class TurnLog:
    def __init__(
        self,
        store: SessionStore,
        log: TranscriptLog,
        read_context: ContextReader,
        retention: timedelta,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self._store = store
        self._log = log
        self._read_context = read_context
        self._retention = retention
        self._clock = clock

    def bind(
        self, tenant: str, session_id: str, request: TurnRequest, fresh_of: FreshMessages
    ) -> BoundTurnResult:
        """Records the request's new messages once per turn, atomically."""
        now = self._clock()
        not_before = now - self._retention
        with self._store.transaction() as tx:
            # Locked: a concurrent copy of this request waits here, then finds the turn.
            session = tx.sessions.lock(session_id, tenant)
            if session is None:
                raise SessionNotFoundError(f"session {session_id} not found")
            kept = tx.bound_turns.get(session_id, request.key, not_before)
            if kept is not None and _same_turn(kept, request, session.entry_count):
                return BoundTurnResult(kept.key, kept.end_seq, replayed=True)
            fresh = fresh_of(self._read_context(tx, session).messages)
            end = session.entry_count
            if fresh:
                appended = self._log.append_in(tx, tenant, session_id, fresh, {})
                if appended.last_seq is not None:
                    end = appended.last_seq + 1
            turn = BoundTurn(request.key, request.request_hash, end, None)
            tx.bound_turns.put(session_id, turn, now)
            tx.bound_turns.delete_expired(not_before, EXPIRED_TURNS_PER_BIND)
            return BoundTurnResult(request.key, end, replayed=False)

    def record_reply(
        self,
        tenant: str,
        session_id: str,
        key: str | None,
        messages: Sequence[Any],
        usage: dict[int, dict[str, int]],
    ) -> bool:
        """Appends the turn's reply unless one was recorded already; True when appended."""
        with self._store.transaction() as tx:
            session = tx.sessions.lock(session_id, tenant)
            if session is None:
                raise SessionNotFoundError(f"session {session_id} not found")
            # An expired turn still says whether its reply was recorded.
            kept = (
                tx.bound_turns.get(session_id, key, datetime.min.replace(tzinfo=UTC))
                if key is not None
                else None
            )
            if kept is not None and kept.reply_end_seq is not None:
                return False
            appended = self._log.append_in(tx, tenant, session_id, messages, usage)
            if kept is not None and key is not None:
                end = appended.last_seq + 1 if appended.last_seq is not None else None
                tx.bound_turns.set_reply(session_id, key, end or session.entry_count)
            return True


def _same_turn(kept: BoundTurn, request: TurnRequest, entry_count: int) -> bool:
    """True when `request` repeats the kept turn."""
    if request.by_body:
        # Nothing but the turn (and its reply) was recorded since.
        return entry_count in (kept.end_seq, kept.reply_end_seq)
    if kept.request_hash != request.request_hash:
        raise IdempotencyMismatchError(
            "Idempotency-Key was already used for a turn with other messages; "
            "use a new key for a new turn"
        )
    return True
