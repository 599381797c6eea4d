"""The vendors' counting and standalone-compaction routes, answered by the service itself
(SPEC §11): no upstream is called, unless COMPACTOR_NATIVE_EDITS=forward gives such
requests to an upstream that implements them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Request
from pydantic import BaseModel, ConfigDict
from starlette.responses import Response

from app.api.auth import proxy_tenant
from app.api.caller_headers import SESSION_HEADER, caller_headers
from app.api.deps import Native, State
from app.api.disconnect import run_until_disconnect
from app.api.problems import documented
from app.api.relay import RelayedStream, whole_answer
from app.api.routing import OrjsonRoute
from app.engine.errors import (
    CompactionStateError,
    InvalidContextManagementError,
    InvalidHistoryError,
    SummarizerError,
)
from app.formats.vendor.apis import MESSAGES, RESPONSES, ProxyApi
from app.services.native.session_context import with_session_context, with_session_messages
from app.services.proxy.call import ProxyCall, ProxyMode
from app.services.sessions.errors import SessionNotFoundError, StoreUnavailableError

router = APIRouter(tags=["native"], route_class=OrjsonRoute)

AnyBody = Annotated[dict[str, Any], Body()]

_ERRORS = documented(
    InvalidContextManagementError,
    CompactionStateError,
    InvalidHistoryError,
    SessionNotFoundError,
    StoreUnavailableError,
)
_COMPACT_ERRORS = documented(
    InvalidContextManagementError,
    CompactionStateError,
    InvalidHistoryError,
    SessionNotFoundError,
    StoreUnavailableError,
    SummarizerError,
)


ProxyTenant = Annotated[str, Depends(proxy_tenant)]


async def forwarded(
    request: Request, state: State, tenant: str, api: ProxyApi, path: str
) -> Response | None:
    """With COMPACTOR_NATIVE_EDITS=forward (and a running proxy), the upstream's own answer
    to the request as received; None when the service answers itself."""
    if state.settings.native_edits != "forward" or state.proxy is None:
        return None
    call = ProxyCall(
        api=api,
        tenant=tenant,
        raw=await request.body(),
        headers=caller_headers(request),
        mode=ProxyMode.OFF,
        query=request.url.query,
    )
    answer = await state.proxy.forward_plain(call, path, "POST")
    headers = [*answer.headers, *answer.report.headers()]
    if answer.stream is not None:
        return RelayedStream(answer.stream, answer.status, headers)
    return whole_answer(answer.status, headers, answer.body)


def session_id_of(request: Request) -> str | None:
    value = request.headers.get(SESSION_HEADER, "").strip()
    return value or None


async def bound_body(
    request: Request, state: State, tenant: str, body: dict[str, Any], api: ProxyApi = RESPONSES
) -> Any:
    """The body as counted or compacted: with a session bound, the session's context first."""
    session_id = session_id_of(request)
    if session_id is None:
        return body
    bind = with_session_messages if api is MESSAGES else with_session_context
    return await bind(state.sessions, tenant, session_id, body)


class CountTokensContextManagement(BaseModel):
    original_input_tokens: int


class MessageTokensCount(BaseModel):
    """Anthropic's BetaMessageTokensCount."""

    input_tokens: int
    context_management: CountTokensContextManagement | None = None


class InputTokenCount(BaseModel):
    """OpenAI's InputTokenCountResponse."""

    object: Literal["response.input_tokens"] = "response.input_tokens"
    input_tokens: int


class CompactedResponse(BaseModel):
    """OpenAI's CompactedResponse."""

    model_config = ConfigDict(extra="allow")

    id: str
    object: Literal["response.compaction"] = "response.compaction"
    created_at: int
    output: list[dict[str, Any]]
    usage: dict[str, Any]


@router.post(
    "/v1/messages/count_tokens",
    response_model=MessageTokensCount,
    response_model_exclude_none=True,
    responses=_ERRORS,
)
async def count_message_tokens(
    body: AnyBody, request: Request, state: State, native: Native, tenant: ProxyTenant
) -> Response | MessageTokensCount:
    """Count an Anthropic Messages request's input tokens locally, its edits applied."""
    upstream = await forwarded(request, state, tenant, MESSAGES, "/v1/messages/count_tokens")
    if upstream is not None:
        return upstream
    body = await bound_body(request, state, tenant, body, MESSAGES)
    edited = await native.anthropic.apply(body, tenant, compact=False)
    cm = (
        CountTokensContextManagement(original_input_tokens=edited.original_input_tokens)
        if edited.has_edits
        else None
    )
    return MessageTokensCount(input_tokens=edited.input_tokens, context_management=cm)


@router.post("/v1/responses/input_tokens", response_model=InputTokenCount, responses=_ERRORS)
async def count_response_input_tokens(
    body: AnyBody, request: Request, state: State, native: Native, tenant: ProxyTenant
) -> Response | InputTokenCount:
    """Count an OpenAI Responses request's input tokens locally."""
    upstream = await forwarded(request, state, tenant, RESPONSES, "/responses/input_tokens")
    if upstream is not None:
        return upstream
    body = await bound_body(request, state, tenant, body)
    counted = native.responses.input_tokens(body, tenant)
    return InputTokenCount(input_tokens=counted["input_tokens"])


@router.post("/v1/responses/compact", response_model=CompactedResponse, responses=_COMPACT_ERRORS)
async def compact_response(
    body: AnyBody, request: Request, state: State, native: Native, tenant: ProxyTenant
) -> Response | CompactedResponse:
    """Compact an OpenAI Responses window: its user messages, then one compaction item."""
    upstream = await forwarded(request, state, tenant, RESPONSES, "/responses/compact")
    if upstream is not None:
        return upstream
    body = await bound_body(request, state, tenant, body)
    result = await run_until_disconnect(
        request, lambda caller_gone: native.responses.compact(body, tenant, caller_gone)
    )
    return CompactedResponse(**result)
