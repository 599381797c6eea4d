"""`X-Compactor-Session` (SPEC §10): a proxied request bound to a stored session appends
its new messages, forwards the session's context, and the upstream's reply is appended.

This is the one module of the proxy that talks to the session store, and it uses only
SessionService's public use cases (append, context, prepare, compact).
"""

from __future__ import annotations

from typing import Any

import anyio

from app.engine.errors import InvalidHistoryError
from app.engine.messages import Role
from app.formats.registry import FORMATS
from app.formats.vendor.replies import UpstreamReply
from app.services.proxy.call import ProxyCall, ProxyReport
from app.services.sessions.service import CompactResult, ForwardedPrompt, SessionService


def new_messages(format_name: str, history: list[Any]) -> list[Any]:
    """What a caller added since the model last spoke: the messages after the last one
    the assistant wrote (the proxy recorded that reply itself from the upstream)."""
    wire = FORMATS.get(format_name)
    for index in range(len(history) - 1, -1, -1):
        try:
            role = wire.parse_message(history[index], f"messages[{index}]").role
        except InvalidHistoryError:
            continue
        if role is Role.ASSISTANT:
            return history[index + 1 :]
    return history


def unrecorded(fresh: list[Any], recorded_tail: list[Any]) -> list[Any]:
    """`fresh` less what the session already recorded after the model last spoke.

    A request whose upstream failed left its new messages in the transcript with no
    reply; the caller's retry sends them again, and they must not be recorded twice.
    """
    count = len(recorded_tail)
    if count and fresh[:count] == recorded_tail:
        return fresh[count:]
    return fresh


def forwarded_prompt(call: ProxyCall, body: dict[str, Any]) -> ForwardedPrompt:
    """The system prompt and tools the request forwards (counted instead of the session's
    own when the request carries them)."""
    tools = body.get("tools")
    return ForwardedPrompt(
        system=call.api.system(body), tools=tools if isinstance(tools, list) else None
    )


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
        received = call.received_body() or body
        # Responses `input` as plain text is one user message.
        history = call.api.history(received) or []
        view = await anyio.to_thread.run_sync(self.sessions.context, call.tenant, call.session_id)
        stored = view.context.messages
        fresh = new_messages(call.api.format, history) if stored else history
        fresh = unrecorded(fresh, new_messages(call.api.format, stored) if stored else [])
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
        return call.api.with_history(call.api.without_server_state(body), list(context.messages))
