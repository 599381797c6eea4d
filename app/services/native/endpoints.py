"""The vendors' counting and standalone-compaction endpoints, answered by the service
itself (SPEC §11): `POST /v1/messages/count_tokens`, `/v1/responses/input_tokens`,
`/v1/responses/compact`; a request bound to a session counts the session's context."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from app.engine.ports import CallerGone
from app.formats.apis.protocol import LocalCount, VendorApi
from app.services.estimation import EstimationService
from app.services.history import request_history
from app.services.native.responses_compaction import CompactedWindow
from app.services.native.services import NativeServices
from app.services.native.session_context import with_session_history
from app.services.sessions.service import SessionService


@dataclass(frozen=True, slots=True)
class MessageTokenCount:
    """Input tokens of a Messages request, its edits applied; what they were before the
    edits when the request had any."""

    input_tokens: int
    original_input_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class VendorEndpoints:
    """Counting and standalone compaction, in the vendors' own terms."""

    native: NativeServices
    sessions: SessionService
    estimation: EstimationService

    async def _bound(
        self, api: VendorApi, body: dict[str, Any], tenant: str, session_id: str | None
    ) -> dict[str, Any]:
        """`body` as counted or compacted: a bound session's context first."""
        if session_id is None:
            return body
        return await with_session_history(self.sessions, tenant, session_id, api, body)

    async def count_message_tokens(
        self, body: dict[str, Any], tenant: str, session_id: str | None
    ) -> MessageTokenCount:
        """Anthropic `count_tokens`: counted locally, the request's edits applied."""
        body = await self._bound(self.native.apis.messages, body, tenant, session_id)
        edited = await self.native.anthropic.apply(body, tenant, compact=False)
        original = edited.original_input_tokens if edited.has_edits else None
        return MessageTokenCount(edited.input_tokens, original)

    async def count_request_tokens(
        self,
        api: VendorApi,
        counting: LocalCount,
        body: dict[str, Any],
        params: Mapping[str, str],
        tenant: str,
        session_id: str | None,
    ) -> dict[str, Any]:
        """A vendor's counting route (one the registry declares), counted locally: the
        vendor's own answer shape."""
        request = await self._bound(api, counting.as_request(body), tenant, session_id)
        envelope = api.checked_envelope(request, params)
        history = request_history(api.format, envelope, envelope.history or [])
        counted = await anyio.to_thread.run_sync(self.estimation.count, history)
        return counting.answer(counted.estimate.tokens)

    async def count_response_tokens(
        self, body: dict[str, Any], tenant: str, session_id: str | None
    ) -> int:
        """Responses `input_tokens`: counted locally."""
        body = await self._bound(self.native.apis.responses, body, tenant, session_id)
        bound = session_id is not None
        return self.native.responses.input_tokens(body, tenant, session_bound=bound)

    async def compact_response(
        self,
        body: dict[str, Any],
        tenant: str,
        session_id: str | None,
        caller_gone: CallerGone,
    ) -> CompactedWindow:
        """Responses `compact`: the window's user messages, then one compaction item."""
        body = await self._bound(self.native.apis.responses, body, tenant, session_id)
        bound = session_id is not None
        return await self.native.responses.compact(body, tenant, caller_gone, session_bound=bound)
