"""Application factory and lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI

from app import __version__
from app.allowed_hosts import parse_allowed_hosts
from app.api.auth import request_metrics_reader, request_tenant
from app.api.hosts import HostAllowList
from app.api.limits import BodySizeLimit
from app.api.mcp import McpRoute, mcp_serving
from app.api.metrics import Metrics
from app.api.openapi import install_problem_openapi
from app.api.problems import install_problem_handlers
from app.api.request_log import RequestObservation
from app.api.routes import (
    cost,
    health,
    history,
    landing,
    metrics,
    native,
    proxy,
    recall,
    sessions,
    system_prompt,
)
from app.api.routes.docs import install_offline_docs
from app.api.routes.pass_through import handled_by_pass_through, install_pass_through
from app.api.state import LifespanState
from app.api.ui.routes import router as ui_router
from app.composition import build_state, build_tracer, check_settings, running_state
from app.engine.ports import Summarizer
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry

__all__ = ["build_state", "create_app"]


def create_app(
    settings: Settings | None = None,
    summarizer: Summarizer | None = None,
    *,
    tokenizers: TokenizerRegistry | None = None,
) -> FastAPI:
    """The ASGI app; `uvicorn --factory app.main:create_app` calls this with no arguments.

    Settings that cannot work refuse here, before anything starts; the lifespan builds
    the state (app.composition). A given `tokenizers` registry is shared, not re-warmed.
    """
    settings = settings or Settings()
    check_settings(settings, summarizer=summarizer is None)
    # Outlives each lifespan run: the middleware counts answers given before or after one.
    observed = Metrics()
    # Outlives each lifespan run too: the request middleware opens the request's span.
    tracer = build_tracer()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[LifespanState]:
        async with (
            running_state(
                settings,
                summarizer=summarizer,
                tokenizers=tokenizers,
                metrics=observed,
                tracer=tracer,
            ) as state,
            mcp_serving(state) as mcp,
        ):
            yield {"compactor": state, "mcp": mcp}

    app = FastAPI(
        title="context-compactor",
        version=__version__,
        summary="Context management for LLM agents: estimate, decide, compact.",
        lifespan=lifespan,
        # Served by install_offline_docs from packaged assets, not FastAPI's CDN pages.
        docs_url=None,
        redoc_url=None,
    )
    install_problem_handlers(app)
    install_problem_openapi(app)
    app.include_router(health.router)
    # Public like /openapi.json: the landing page and the API reference.
    app.include_router(landing.router)
    install_offline_docs(app)
    authenticated = [Depends(request_tenant)]
    app.include_router(history.router, dependencies=authenticated)
    app.include_router(sessions.router, dependencies=authenticated)
    app.include_router(recall.router, dependencies=authenticated)
    app.include_router(cost.router, dependencies=authenticated)
    app.include_router(system_prompt.router, dependencies=authenticated)
    # /metrics sums every tenant: with keys on, only the operator's metrics key reads it.
    app.include_router(metrics.router, dependencies=[Depends(request_metrics_reader)])
    app.include_router(native.router)
    # Proxy routes authenticate with X-Compactor-Key: Authorization belongs to the upstream.
    app.include_router(proxy.router)
    # The inspector checks the key itself: a browser brings it in a cookie.
    app.include_router(ui_router)
    # Keep this after every router: the catch-all /v1/* pass-through (SPEC §18) answers
    # only what no route above it does.
    install_pass_through(app)
    # /mcp (SPEC §17) goes to the MCP SDK's handler, inside the body limit and host check.
    app.add_middleware(McpRoute)
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_body_bytes,
        timeout_seconds=settings.body_timeout_seconds,
        max_pending_bytes=settings.max_pending_body_bytes,
        # Pass-through bodies (file uploads, audio) go on as they arrive, not held whole.
        streamed=handled_by_pass_through(app),
    )
    # Before the body is read: a host the service does not answer to gets nothing.
    app.add_middleware(HostAllowList, allowed=parse_allowed_hosts(settings.allowed_hosts))
    # Added last, so it runs first: every answer (a 413 included) gets an id and a metric.
    app.add_middleware(RequestObservation, metrics=observed, tracer=tracer)
    return app
