"""A Responses counting or compaction request bound to a stored session (SPEC §11): the
session holds the history `previous_response_id` / `conversation` would have named."""

from __future__ import annotations

from typing import Any

import anyio

from app.formats.vendor.native_responses import input_items
from app.services.native.responses_compaction import SERVER_STATE_FIELDS
from app.services.proxy.session_binding import new_messages
from app.services.sessions.service import SessionService


async def with_session_context(
    sessions: SessionService, tenant: str, session_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    """`body` with the session's context in front of the request's new items, and the
    server-side history fields gone (the session stands for them). The session is read,
    never written: counting and a standalone compaction append nothing."""
    view = await anyio.to_thread.run_sync(sessions.context, tenant, session_id)
    items = input_items(body.get("input"))
    context = list(view.context.messages)
    fresh = new_messages("responses", items) if context else items
    kept = {k: v for k, v in body.items() if k not in SERVER_STATE_FIELDS}
    return {**kept, "input": [*context, *fresh]}


async def with_session_messages(
    sessions: SessionService, tenant: str, session_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    """An Anthropic Messages `body` with the session's context in front of the request's
    new messages, and the session's system prompt when the request has none. Read only."""
    view = await anyio.to_thread.run_sync(sessions.context, tenant, session_id)
    sent = body.get("messages")
    messages = sent if isinstance(sent, list) else []
    context = list(view.context.messages)
    fresh = new_messages("anthropic", messages) if context else messages
    bound = {**body, "messages": [*context, *fresh]}
    if body.get("system") is None and view.context.session.system is not None:
        bound["system"] = view.context.session.system
    return bound
