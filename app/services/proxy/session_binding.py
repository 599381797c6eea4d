"""`X-Compactor-Session` (SPEC §10): a proxied request bound to a stored session appends
its new messages, forwards the session's context, and the upstream's reply is appended.

Binding is atomic and idempotent: the request is one turn, kept under its
`Idempotency-Key` (else its body), so a retry records nothing and forwards the context
as the turn left it, and only the first reply of a turn is recorded. A compaction of
the session already running is waited for (bounded); a failing summarizer forwards the
context uncompacted (fail open), as stateless requests do.

This is the one module of the proxy that talks to the session store, and it uses only
SessionService's public use cases (append, context, prepare, compact).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anyio

from app.engine.errors import SummarizerError
from app.formats.apis.protocol import UpstreamReply
from app.services.json_bytes import json_bytes
from app.services.proxy.call import ProxyCall
from app.services.proxy.pipeline import Exchange
from app.services.proxy.report import CompactionPreview, ProxyReport
from app.services.proxy.turns import new_messages, unrecorded
from app.services.sessions.errors import CompactionConflictError
from app.services.sessions.service import (
    BoundTurnResult,
    CompactResult,
    ContextView,
    ForwardedPrompt,
    SessionService,
    TurnRequest,
)

# How long a bound request waits for a compaction of its session already running.
DEFAULT_COMPACTION_WAIT_SECONDS = 60.0


def forwarded_prompt(call: ProxyCall, body: dict[str, Any]) -> ForwardedPrompt:
    """The system prompt and tools the request forwards (counted instead of the session's
    own when the request carries them)."""
    envelope = call.envelope if body is call.body else call.api.envelope(body, call.path_params)
    if envelope is None:
        return ForwardedPrompt()
    return ForwardedPrompt(
        system=envelope.system, tools=envelope.tools, output_budget=envelope.output_budget
    )


def turn_request(call: ProxyCall, history: list[Any]) -> TurnRequest:
    """What makes a retry of `call` the same turn: its Idempotency-Key, else its body."""
    history_hash = hashlib.sha256(json_bytes(history, "messages")).hexdigest()
    if call.idempotency_key:
        named = b"key\0" + call.idempotency_key.encode("utf-8", "surrogatepass")
        return TurnRequest(hashlib.sha256(named).hexdigest(), history_hash, by_body=False)
    received = b"body\0" + call.api.name.encode() + b"\0" + call.raw
    return TurnRequest(hashlib.sha256(received).hexdigest(), history_hash, by_body=True)


class SessionBinding:
    """Proxied requests bound to stored sessions."""

    def __init__(
        self,
        sessions: SessionService,
        compaction_wait_seconds: float = DEFAULT_COMPACTION_WAIT_SECONDS,
    ) -> None:
        self.sessions = sessions
        self.compaction_wait_seconds = compaction_wait_seconds

    async def bind_turn(self, call: ProxyCall) -> BoundTurnResult:
        """Records the request's new messages, once per turn however often it comes."""
        assert call.session_id is not None
        history = _received_history(call)
        request = turn_request(call, history)
        return await anyio.to_thread.run_sync(
            self.sessions.bind_turn,
            call.tenant,
            call.session_id,
            request,
            _fresh_messages(call, history),
        )

    async def preview(
        self, call: ProxyCall, body: dict[str, Any], report: ProxyReport
    ) -> dict[str, Any]:
        """A dry run: the body with the session's context and the request's new messages,
        uncompacted, and in `report` what `prepare` would do with them; nothing written
        (the turn is not recorded, so sending it for real next does all of it)."""
        assert call.session_id is not None
        prompt = forwarded_prompt(call, body)
        fresh_of = _fresh_messages(call, _received_history(call))
        view, result = await self.sessions.preview_turn(
            call.tenant, call.session_id, fresh_of, prompt, call.caller_gone
        )
        report.preview = _preview_of(view, result)
        return self._forwarded(call, body, CompactResult(False, None, view), report)

    async def bind(
        self,
        call: ProxyCall,
        body: dict[str, Any],
        report: ProxyReport,
        turn: BoundTurnResult | None = None,
    ) -> dict[str, Any] | None:
        """Binds the request's turn (unless given); the body with the session's context
        (for a retried turn, the context as the turn left it)."""
        assert call.session_id is not None
        if turn is None:
            turn = await self.bind_turn(call)
        result = await self._prepared(call, body, report)
        return self._forwarded(call, body, result, report, turn)

    async def _prepared(
        self, call: ProxyCall, body: dict[str, Any], report: ProxyReport
    ) -> CompactResult:
        """The session's context, compacted when due; on a failing summarizer, as it is."""
        assert call.session_id is not None
        prompt = forwarded_prompt(call, body)
        try:
            return await self.sessions.prepare(
                call.tenant, call.session_id, call.caller_gone, prompt, self.compaction_wait_seconds
            )
        except SummarizerError as exc:
            # Fail open: the upstream may still take the context; a summary is an aid.
            # The compaction log and metrics have the failure.
            reason = f"compaction failed: {type(exc).__name__}"
        except CompactionConflictError:
            # Another compaction committed first: its result is the context now.
            reason = "another compaction of this session finished first"
        report.note = reason
        view = await anyio.to_thread.run_sync(
            self.sessions.context, call.tenant, call.session_id, prompt
        )
        return CompactResult(compacted=False, record=None, view=view, reason=reason)

    async def recover_overflow(
        self,
        call: ProxyCall,
        body: dict[str, Any],
        report: ProxyReport,
        turn: BoundTurnResult | None = None,
    ) -> dict[str, Any] | None:
        """Compacts the session (trigger overflow); the body with its new context."""
        assert call.session_id is not None
        result = await self.sessions.compact(
            call.tenant,
            call.session_id,
            "overflow",
            None,
            None,
            call.caller_gone,
            prompt=forwarded_prompt(call, body),
        )
        return self._forwarded(call, body, result, report, turn)

    async def record_reply(
        self, call: ProxyCall, reply: UpstreamReply, turn: BoundTurnResult | None = None
    ) -> None:
        """Appends the upstream's reply, its usage on the last message, unless the turn's
        reply was recorded already (a retry's, or the first copy's)."""
        assert call.session_id is not None
        usage = {len(reply.messages) - 1: reply.usage} if reply.usage else {}
        await anyio.to_thread.run_sync(
            self.sessions.record_turn_reply,
            call.tenant,
            call.session_id,
            turn.key if turn is not None else None,
            reply.messages,
            usage,
        )

    def _forwarded(
        self,
        call: ProxyCall,
        body: dict[str, Any],
        result: CompactResult,
        report: ProxyReport,
        turn: BoundTurnResult | None = None,
    ) -> dict[str, Any]:
        """`body` with `result`'s context (for a retried turn, the context as the turn
        left it), and `report` filled in."""
        if turn is not None and turn.replayed:
            result = replace(result, view=self.sessions.context_before(result.view, turn.end_seq))
        context = result.view.context
        tokens = result.view.counted.estimate.tokens
        report.tokens_after = tokens
        if result.compacted and result.record is not None:
            report.tokens_before = result.record.tokens_before
        else:
            report.tokens_before = tokens
        report.compacted = result.compacted or context.latest is not None
        if result.prepared is not None:
            report.prepared = result.prepared
        # The session's context stands for upstream-stored history: forwarding both would
        # give the model the conversation twice.
        forwarded = call.api.with_history(call.api.without_server_state(body), context.messages)
        summary_at = context.seqs.index(None) if None in context.seqs else None
        return call.api.with_cache_breakpoints(body, forwarded, summary_at)


def _received_history(call: ProxyCall) -> list[Any]:
    # The transcript records what the caller sent, not a natively edited copy.
    envelope = call.envelope
    return list(envelope.history) if envelope is not None and envelope.history else []


def _fresh_messages(call: ProxyCall, history: list[Any]) -> Callable[[list[Any]], list[Any]]:
    """What of `history` a turn records, given the session's context messages."""
    fmt = call.api.format

    def fresh_of(stored: list[Any]) -> list[Any]:
        fresh = new_messages(fmt, history) if stored else history
        return unrecorded(fresh, new_messages(fmt, stored) if stored else [], fmt)

    return fresh_of


def _preview_of(view: ContextView, result: CompactResult) -> CompactionPreview:
    """A bound dry run's report: `result` is what prepare would do to `view`."""
    before = view.counted.estimate.tokens
    record = result.record
    if not result.compacted or record is None:
        return CompactionPreview(False, before, before, reason=result.reason)
    folded = result.folded
    return CompactionPreview(
        True,
        record.tokens_before,
        record.tokens_after,
        folded=folded[1] - folded[0] + 1 if folded is not None else 0,
        cut=record.first_kept_seq,
        folded_seqs=folded,
    )


class SessionStage:
    """The pipeline's session binding: a request with `X-Compactor-Session` forwards the
    session's context, and its reply is recorded when the upstream finished it."""

    def __init__(self, binding: SessionBinding) -> None:
        self.binding = binding

    async def run(self, exchange: Exchange) -> None:
        call = exchange.call
        body = exchange.working_body
        if not call.bound or body is None:
            return
        report = exchange.report
        if call.dry_run:
            exchange.body = await self.binding.preview(call, body, report)
            return
        turn = await self.binding.bind_turn(call)
        forwarded = await self.binding.bind(call, body, report, turn)
        if forwarded is not None:
            exchange.body = forwarded

        async def recover() -> dict[str, Any] | None:
            return await self.binding.recover_overflow(call, body, report, turn)

        async def record(reply: UpstreamReply) -> None:
            await self.binding.record_reply(call, reply, turn)

        exchange.recover_overflow = recover
        exchange.record_reply = record
