"""Pass-through (SPEC §18): every `/v1/*` route the service does not manage
(`/v1/embeddings`, `/v1/completions`, `/v1/files`, `/v1/messages/batches`, `/v1/audio/*`,
…, any method) goes to the matching upstream unchanged, so one SDK client works for
everything. Which upstream: `app.formats.apis.pass_through`.

The route is a catch-all and must come after every managed route: `install_pass_through`
appends it to the app's routes and `create_app` calls it after every router is included.
A route registered later would still be matched first only if it comes before; the test
`tests/integration/proxy/test_pass_through_routes.py` checks that every /v1 route of the
app wins over the catch-all.

Bodies are not held: the size limit middleware passes them on as they arrive
(`handled_by_pass_through`), and the answer is relayed as it comes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Annotated

from fastapi import Depends, FastAPI, Request
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from app.api.auth import proxy_tenant
from app.api.deps import get_state
from app.api.disconnect import run_until_disconnect
from app.api.problems import ApiError
from app.api.proxy_headers import caller_headers
from app.api.routes.proxy import proxy_response
from app.engine.errors import CallerGoneError
from app.engine.ports import CallerGone
from app.formats.apis.registry import has_dot_segment, path_under_base, upstream_for
from app.services.proxy.report import ProxyAnswer
from app.services.proxy.service import PlainCall, ProxyService

PASS_THROUGH_PATH = "/v1/{path:path}"
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


async def _proxy(request: Request) -> ProxyService:
    proxy = get_state(request).proxy
    if proxy is None:
        raise ApiError(503, "Proxy unavailable", "the proxy is not running", "proxy-unavailable")
    return proxy


async def _tenant(request: Request) -> str:
    return proxy_tenant(request)


def received_path(scope: Scope) -> str:
    """The path as the caller wrote it (percent-escapes kept: `file%2Fx` stays one
    segment), without the app's root path."""
    raw = scope.get("raw_path")
    path: str = raw.decode("latin-1") if raw else scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _body(
    request: Request, read: asyncio.Event
) -> tuple[AsyncIterator[bytes] | bytes | None, int | None]:
    """The body as it arrives (never held whole), its declared length; None without one."""
    headers = request.headers
    declared = headers.get("content-length")
    if declared is None and "transfer-encoding" not in headers:
        read.set()
        return None, None
    if declared == "0":
        read.set()
        return b"", None
    length = int(declared) if declared is not None and declared.isdigit() else None

    async def chunks() -> AsyncIterator[bytes]:
        try:
            async for chunk in request.stream():
                if chunk:
                    yield chunk
        except ClientDisconnect:
            raise CallerGoneError("the client disconnected during the upload") from None
        finally:
            read.set()

    return chunks(), length


async def pass_through(
    request: Request,
    proxy: Annotated[ProxyService, Depends(_proxy)],
    tenant: Annotated[str, Depends(_tenant)],
) -> Response:
    """A route the service does not manage, forwarded to its upstream unchanged."""
    path = received_path(request.scope)
    if has_dot_segment(path) or has_dot_segment(request.scope["path"]):
        raise ApiError(404, "Not found", "a path with . or .. segments is refused", "not-found")
    upstream = upstream_for(path, request.headers.keys())
    read = asyncio.Event()
    body, length = _body(request, read)
    plain = PlainCall(
        upstream=upstream,
        method=request.method,
        path=path_under_base(upstream, path),
        headers=caller_headers(request),
        body=body,
        query=request.url.query,
        content_length=length,
    )

    async def work(caller_gone: CallerGone) -> ProxyAnswer:
        return await proxy.forward_plain(plain)

    return proxy_response(await run_until_disconnect(request, work, body_read=read))


def install_pass_through(app: FastAPI) -> None:
    """Appends the catch-all `/v1/*` route after every route the app has (call last)."""
    app.add_api_route(
        PASS_THROUGH_PATH,
        pass_through,
        methods=_METHODS,
        name="pass_through",
        include_in_schema=False,
    )


def is_pass_through(routes: Sequence[BaseRoute], scope: Scope) -> bool:
    """True when the router would give `scope` to the pass-through route: it is the
    first route that fully matches (every managed route comes before it)."""
    for route in routes:
        match, child = route.matches(dict(scope))
        if match is Match.FULL:
            return child.get("endpoint") is pass_through
    return False


def handled_by_pass_through(app: FastAPI) -> Callable[[Scope], bool]:
    """Whether a request goes to the pass-through route (its body is then streamed)."""

    def streamed(scope: Scope) -> bool:
        if not scope.get("path", "").startswith("/v1/"):
            return False
        return is_pass_through(app.router.routes, scope)

    return streamed
