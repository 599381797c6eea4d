"""A counting or standalone-compaction request bound to a stored session (SPEC §11): the
session holds the history that `previous_response_id` / `conversation` (or the caller's
own earlier turns) would have named. Read only: nothing is appended."""

from __future__ import annotations

from typing import Any

import anyio

from app.formats.apis.protocol import VendorApi
from app.services.proxy.turns import new_messages
from app.services.sessions.service import SessionService


async def with_session_history(
    sessions: SessionService, tenant: str, session_id: str, api: VendorApi, body: dict[str, Any]
) -> dict[str, Any]:
    """`body` with the session's context in front of the request's new messages, the
    upstream-stored history fields gone (the session stands for them), and the session's
    system prompt when the request has none."""
    view = await anyio.to_thread.run_sync(sessions.context, tenant, session_id)
    envelope = api.checked_envelope(body)
    sent = envelope.history or []
    context = list(view.context.messages)
    fresh = new_messages(api.format, sent) if context else sent
    bound = api.with_history(api.without_server_state(body), [*context, *fresh])
    system = view.context.session.system
    if envelope.system is None and system is not None:
        bound = api.with_system(bound, system)
    return bound
