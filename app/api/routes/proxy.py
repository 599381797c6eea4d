"""Proxy mode (SPEC §10): the vendors' model APIs, forwarded to the configured upstreams
with context management on the way. Point an SDK's base_url here.

One route per registered vendor API (`app.formats.apis.registry`), each its own OpenAPI
operation; a new API in the registry is a new route here with no code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Header, Request
from starlette.responses import Response

from app.api.auth import proxy_tenant
from app.api.deps import get_state
from app.api.disconnect import run_until_disconnect
from app.api.problems import ApiError, Problem
from app.api.proxy_headers import answer_headers, caller_headers
from app.api.relay import RelayedStream, whole_answer
from app.api.state import AppState
from app.engine.ports import CallerGone
from app.formats.apis.protocol import VendorApi
from app.formats.apis.registry import VENDOR_APIS, path_under_base, upstream_for
from app.services.proxy.call import ProxyCall, ProxyMode
from app.services.proxy.report import ProxyAnswer
from app.services.proxy.service import PlainCall, ProxyService

router = APIRouter(tags=["proxy"])


# The dependencies are coroutines: FastAPI runs a plain function in its thread pool, a
# hop to another thread and back on every request, for work that never blocks.
async def _state(request: Request) -> AppState:
    return get_state(request)


async def _tenant(request: Request) -> str:
    return proxy_tenant(request)


State = Annotated[AppState, Depends(_state)]
ProxyTenant = Annotated[str, Depends(_tenant)]
ModeHeader = Annotated[
    str | None,
    Header(
        alias="X-Compactor-Mode",
        description="transparent, native or off for this request (default: COMPACTOR_PROXY_MODE).",
    ),
]
SessionHeader = Annotated[
    str | None,
    Header(
        alias="X-Compactor-Session",
        description="A stored session this request belongs to: its context is forwarded.",
        max_length=200,
    ),
]
DryRunHeader = Annotated[
    str | None,
    Header(
        alias="X-Compactor-Dry-Run",
        description="1: forward the request uncompacted, write nothing, and report what "
        "compaction would have done in X-Compactor-Would-* headers.",
        max_length=10,
    ),
]
_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The upstream's answer, as it sent it (JSON, or server-sent events "
        "with stream: true); errors from the upstream pass through with their own status.",
        "content": {"application/json": {}, "text/event-stream": {}},
    },
    400: {
        "model": Problem,
        "description": "An invalid X-Compactor-Mode or X-Compactor-Dry-Run, a dry run "
        "of a request with native context management, native context management the "
        "service refuses (on-demand compaction refusals come in the vendor's own error "
        "shape, with its error_code), or no upstream is configured for this API (in the "
        "vendor's error shape, naming the variable to set).",
    },
    401: {"model": Problem},
    404: {"model": Problem, "description": "X-Compactor-Session names no session."},
    502: {"model": Problem, "description": "The upstream is unreachable."},
    504: {"model": Problem, "description": "The upstream did not answer in time."},
}
_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"type": "object"}}},
    }
}


async def _proxy_service(state: State) -> ProxyService:
    if state.proxy is None:
        raise ApiError(503, "Proxy unavailable", "the proxy is not running", "proxy-unavailable")
    return state.proxy


Proxy = Annotated[ProxyService, Depends(_proxy_service)]


def _mode(presented: str | None, default: str) -> ProxyMode:
    value = (presented or default).strip().lower()
    try:
        return ProxyMode(value)
    except ValueError:
        raise ApiError(
            400,
            "Invalid proxy mode",
            f"X-Compactor-Mode: unknown mode {value!r}; use transparent, native or off",
            "invalid-proxy-mode",
        ) from None


_YES, _NO = frozenset({"1", "true", "yes", "on"}), frozenset({"", "0", "false", "no", "off"})


def _dry_run(presented: str | None) -> bool:
    value = (presented or "").strip().lower()
    if value in _YES or value in _NO:
        return value in _YES
    raise ApiError(
        400,
        "Invalid dry-run header",
        f"X-Compactor-Dry-Run: {value!r} is neither 1 nor 0 (true/false)",
        "invalid-dry-run",
    )


def proxy_response(answer: ProxyAnswer) -> Response:
    """A proxy answer as HTTP: relayed as a stream, or whole, with the report headers."""
    headers = answer_headers(answer)
    if answer.stream is not None:
        return RelayedStream(answer.stream, answer.status, headers)
    return whole_answer(answer.status, headers, answer.body)


def _route(api: VendorApi) -> Any:
    async def forward(
        request: Request,
        proxy: Proxy,
        state: State,
        tenant: ProxyTenant,
        mode: ModeHeader = None,
        session: SessionHeader = None,
        dry_run: DryRunHeader = None,
    ) -> Response:
        call = ProxyCall(
            api=api,
            tenant=tenant,
            raw=await request.body(),
            headers=caller_headers(request),
            mode=_mode(mode, state.settings.proxy_mode),
            session_id=session.strip() if session and session.strip() else None,
            query=request.url.query,
            path_params=path_params(request, api.path_choices),
            idempotency_key=request.headers.get("idempotency-key"),
            dry_run=_dry_run(dry_run),
        )

        async def work(caller_gone: CallerGone) -> ProxyAnswer:
            return await proxy.forward(replace(call, caller_gone=caller_gone))

        return proxy_response(await run_until_disconnect(request, work))

    return forward


_PATH_PARAMETER = re.compile(r"{(\w+)}")


def openapi_extra(route: str, choices: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """The operation's JSON body, and the path parameters of its template (`{model}`):
    the generic route function does not name them, so they are declared here."""
    parameters = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": {"type": "string", "enum": list(choices[name])}
            if name in choices
            else {"type": "string"},
        }
        for name in _PATH_PARAMETER.findall(route)
    ]
    return {**_BODY, "parameters": parameters} if parameters else _BODY


def path_params(request: Request, choices: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """The request's path parameters; one outside the values its API allows is 404."""
    params = dict(request.path_params)
    for name, allowed in choices.items():
        if params.get(name) not in allowed:
            raise ApiError(404, "Not found", f"no route {request.url.path}", "not-found")
    return params


for _api in VENDOR_APIS:
    router.add_api_route(
        _api.route,
        _route(_api),
        methods=["POST"],
        name=_api.name,
        description=_api.description,
        responses=_ANSWERS,
        openapi_extra=openapi_extra(_api.route, _api.path_choices),
    )


async def _forward_models(
    request: Request, proxy: ProxyService, tenant: str, suffix: str
) -> Response:
    return proxy_response(await proxy.forward_plain(_models_call(request, "/v1/models" + suffix)))


def _models_call(request: Request, path: str) -> PlainCall:
    """A model-list GET forwarded as sent, to the upstream its headers and path name."""
    upstream = upstream_for(path, request.headers.keys())
    return PlainCall(
        upstream=upstream,
        method="GET",
        path=path_under_base(upstream, path),
        headers=caller_headers(request),
        query=request.url.query,
        label=VENDOR_APIS.for_upstream(upstream).name,
    )


_MODEL_ANSWERS = {
    **_ANSWERS,
    400: {"model": Problem, "description": "No upstream is configured for this API."},
}


@router.get("/v1/models", responses=_MODEL_ANSWERS)
async def list_models(request: Request, proxy: Proxy, tenant: ProxyTenant) -> Response:
    """The upstream's model list (Anthropic's when the request carries anthropic-version)."""
    return await _forward_models(request, proxy, tenant, "")


@router.get("/v1/models/{model_id}", responses=_MODEL_ANSWERS)
async def get_model(
    request: Request, proxy: Proxy, state: State, tenant: ProxyTenant, model_id: str
) -> Response:
    """One model, from the upstream; Anthropic's `capabilities` then also flag the context
    management the service emulates (its edits and on-demand compaction)."""
    if model_id in (".", ".."):
        raise ApiError(404, "Not found", "no such model", "not-found")
    call = _models_call(request, "/v1/models/" + quote(model_id, safe=""))
    answer = await proxy.forward_plain(call)
    wire = VENDOR_APIS.for_upstream(call.upstream).context_management
    emulated = state.settings.native_edits == "emulate"
    if wire is not None and emulated and answer.status == 200 and answer.stream is not None:
        # A model object is small: read it whole to write the emulated capabilities in.
        body = b"".join([chunk async for chunk in answer.stream])
        headers = [(k, v) for k, v in answer.headers if k.lower() != "content-length"]
        answer = replace(answer, headers=headers, body=wire.with_capabilities(body), stream=None)
    return proxy_response(answer)
