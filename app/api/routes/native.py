"""The vendors' counting and standalone-compaction routes, answered by the service itself
(SPEC §11): no upstream is called, unless COMPACTOR_NATIVE_EDITS=forward gives such
requests to an upstream that implements them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Body, Depends, Request
from pydantic import BaseModel, ConfigDict
from starlette.responses import Response

from app.api.auth import request_proxy_tenant
from app.api.deps import State, VendorRoutes
from app.api.disconnect import run_until_disconnect
from app.api.problems import ApiError, documented
from app.api.proxy_headers import caller_headers, session_id_of
from app.api.routes.proxy import openapi_extra, path_params, proxy_response
from app.api.routing import OrjsonRoute
from app.engine.errors import (
    CompactionStateError,
    InvalidContextManagementError,
    InvalidHistoryError,
    SummarizerError,
)
from app.formats.apis.protocol import LocalCount, Upstream, VendorApi
from app.formats.apis.registry import VENDOR_APIS
from app.services.proxy.service import PlainCall
from app.services.sessions.errors import SessionNotFoundError, StoreUnavailableError

router = APIRouter(tags=["native"], route_class=OrjsonRoute)

AnyBody = Annotated[dict[str, Any], Body()]

_REQUEST_ERRORS = (
    InvalidContextManagementError,
    CompactionStateError,
    InvalidHistoryError,
    SessionNotFoundError,
    StoreUnavailableError,
)
_ERRORS = documented(*_REQUEST_ERRORS)
# A standalone compaction calls the summarizer; counting never does.
_COMPACT_ERRORS = documented(*_REQUEST_ERRORS, SummarizerError)


ProxyTenant = Annotated[str, Depends(request_proxy_tenant)]


async def forwarded(
    request: Request, state: State, tenant: str, upstream: Upstream, path: str
) -> Response | None:
    """With COMPACTOR_NATIVE_EDITS=forward (and a running proxy), the upstream's own answer
    to the request as received; None when the service answers itself."""
    if state.settings.native_edits != "forward" or state.proxy is None:
        return None
    call = PlainCall(
        upstream=upstream,
        method="POST",
        path=path,
        headers=caller_headers(request),
        body=await request.body(),
        query=request.url.query,
        label=VENDOR_APIS.for_upstream(upstream).name,
    )
    return proxy_response(await state.proxy.forward_plain(call))


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
    body: AnyBody, request: Request, state: State, vendor: VendorRoutes, tenant: ProxyTenant
) -> Response | MessageTokensCount:
    """Count an Anthropic Messages request's input tokens locally, its edits applied."""
    path = "/v1/messages/count_tokens"
    upstream = await forwarded(request, state, tenant, Upstream.ANTHROPIC, path)
    if upstream is not None:
        return upstream
    counted = await vendor.count_message_tokens(body, tenant, session_id_of(request))
    original = counted.original_input_tokens
    cm = None
    if original is not None:
        cm = CountTokensContextManagement(original_input_tokens=original)
    return MessageTokensCount(input_tokens=counted.input_tokens, context_management=cm)


@router.post("/v1/responses/input_tokens", response_model=InputTokenCount, responses=_ERRORS)
async def count_response_input_tokens(
    body: AnyBody, request: Request, state: State, vendor: VendorRoutes, tenant: ProxyTenant
) -> Response | InputTokenCount:
    """Count an OpenAI Responses request's input tokens locally."""
    path = "/responses/input_tokens"
    upstream = await forwarded(request, state, tenant, Upstream.OPENAI, path)
    if upstream is not None:
        return upstream
    tokens = await vendor.count_response_tokens(body, tenant, session_id_of(request))
    return InputTokenCount(input_tokens=tokens)


@router.post("/v1/responses/compact", response_model=CompactedResponse, responses=_COMPACT_ERRORS)
async def compact_response(
    body: AnyBody, request: Request, state: State, vendor: VendorRoutes, tenant: ProxyTenant
) -> Response | CompactedResponse:
    """Compact an OpenAI Responses window: its user messages, then one compaction item."""
    upstream = await forwarded(request, state, tenant, Upstream.OPENAI, "/responses/compact")
    if upstream is not None:
        return upstream
    session_id = session_id_of(request)
    window = await run_until_disconnect(
        request,
        lambda caller_gone: vendor.compact_response(body, tenant, session_id, caller_gone),
    )
    return CompactedResponse(
        id=window.id, created_at=window.created_at, output=window.output, usage=window.usage
    )


def _local_count_route(api: VendorApi, counting: LocalCount) -> Any:
    async def count(
        request: Request, state: State, vendor: VendorRoutes, tenant: ProxyTenant
    ) -> Response:
        try:
            body = orjson.loads(await request.body() or b"null")
        except orjson.JSONDecodeError as exc:
            raise ApiError(
                400,
                "Malformed JSON",
                f"the request body is not valid JSON ({exc})",
                "malformed-json",
            ) from None
        if not isinstance(body, dict):
            raise ApiError(
                400, "Invalid request", "the body must be a JSON object", "invalid-request"
            )
        answer = await vendor.count_request_tokens(
            api,
            counting,
            body,
            path_params(request, api.path_choices),
            tenant,
            session_id_of(request),
        )
        return Response(orjson.dumps(answer), media_type="application/json")

    return count


# Counting routes the registry declares (Gemini's countTokens), answered locally.
for _api in VENDOR_APIS:
    _counting = _api.local_count
    if _counting is None:
        continue
    router.add_api_route(
        _counting.route,
        _local_count_route(_api, _counting),
        methods=["POST"],
        name=f"{_api.name}_count_tokens",
        description=_counting.description,
        responses={
            200: {
                "description": "The vendor's counting answer.",
                "content": {"application/json": {}},
            },
            **_ERRORS,
        },
        openapi_extra=openapi_extra(_counting.route, _api.path_choices),
    )
