"""`X-Compactor-Session` (SPEC §10): a proxied request bound to a stored session appends
its new messages, forwards the session's context, and the upstream's reply is appended.

This is the one module of the proxy that talks to the session store, and it uses only
SessionService's public use cases (append, context, prepare, compact).
"""

from __future__ import annotations

from typing import Any

import anyio

from app.formats.apis.protocol import UpstreamReply
from app.services.proxy.call import ProxyCall
from app.services.proxy.pipeline import Exchange
from app.services.proxy.report import ProxyReport
from app.services.proxy.turns import new_messages, unrecorded
from app.services.sessions.service import CompactResult, ForwardedPrompt, SessionService


def forwarded_prompt(call: ProxyCall, body: dict[str, Any]) -> ForwardedPrompt:
    """The system prompt and tools the request forwards (counted instead of the session's
    own when the request carries them)."""
    envelope = call.envelope if body is call.body else call.api.envelope(body, call.path_params)
    if envelope is None:
        return ForwardedPrompt()
    return ForwardedPrompt(system=envelope.system, tools=envelope.tools)


class SessionBinding:
    """Proxied requests bound to stored sessions."""

    def __init__(self, sessions: SessionService) -> None:
        self.sessions = sessions

    async def bind(
        self, call: ProxyCall, body: dict[str, Any], report: ProxyReport
    ) -> dict[str, Any] | None:
        """Appends the request's new messages; the body with the session's context."""
        assert call.session_id is not None
        # The transcript records what the caller sent, not a natively edited copy.
        envelope = call.envelope
        history = envelope.history if envelope is not None and envelope.history else []
        view = await anyio.to_thread.run_sync(self.sessions.context, call.tenant, call.session_id)
        stored = view.context.messages
        fmt = call.api.format
        fresh = new_messages(fmt, history) if stored else history
        fresh = unrecorded(fresh, new_messages(fmt, stored) if stored else [])
        if fresh:
            await anyio.to_thread.run_sync(
                self.sessions.append, call.tenant, call.session_id, fresh, {}
            )
        result = await self.sessions.prepare(
            call.tenant, call.session_id, call.caller_gone, forwarded_prompt(call, body)
        )
        return self._forwarded(call, body, result, report)

    async def recover_overflow(
        self, call: ProxyCall, body: dict[str, Any], report: ProxyReport
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
        return self._forwarded(call, body, result, report)

    async def record_reply(self, call: ProxyCall, reply: UpstreamReply) -> None:
        """Appends the upstream's reply, its usage on the last message."""
        assert call.session_id is not None
        usage = {len(reply.messages) - 1: reply.usage} if reply.usage else {}
        await anyio.to_thread.run_sync(
            self.sessions.append, call.tenant, call.session_id, reply.messages, usage
        )

    @staticmethod
    def _forwarded(
        call: ProxyCall, body: dict[str, Any], result: CompactResult, report: ProxyReport
    ) -> dict[str, Any]:
        context = result.view.context
        tokens = result.view.counted.estimate.tokens
        report.tokens_after = tokens
        if result.compacted and result.record is not None:
            report.tokens_before = result.record.tokens_before
        else:
            report.tokens_before = tokens
        report.compacted = result.compacted or context.latest is not None
        # The session's context stands for upstream-stored history: forwarding both would
        # give the model the conversation twice.
        return call.api.with_history(call.api.without_server_state(body), context.messages)


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
        forwarded = await self.binding.bind(call, body, report)
        if forwarded is not None:
            exchange.body = forwarded

        async def recover() -> dict[str, Any] | None:
            return await self.binding.recover_overflow(call, body, report)

        async def record(reply: UpstreamReply) -> None:
            await self.binding.record_reply(call, reply)

        exchange.recover_overflow = recover
        exchange.record_reply = record
