"""Application factory and lifespan."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
from fastapi import Depends, FastAPI

from app import __version__
from app.api.auth import current_tenant, parse_api_keys
from app.api.limits import BodySizeLimit
from app.api.metrics import Metrics
from app.api.openapi import install_problem_openapi
from app.api.problems import install_problem_handlers
from app.api.request_log import RequestObservation
from app.api.routes import health, history, metrics, sessions, system_prompt
from app.api.state import AppState
from app.engine.counting.count_cache import TokenCountCache
from app.engine.ports import Summarizer
from app.registry import load_registry
from app.services.compaction import CompactionService
from app.services.estimation import EstimationService
from app.services.sessions.service import SessionService
from app.services.summarizers import (
    build_summarizer,
    initial_summarizer,
    needs_http_client,
    summarizer_http_client,
)
from app.settings import Settings
from app.store.database import create_db_engine, session_factory
from app.store.migrate import schema_problem, upgrade
from app.tokenizers.bpe import TokenizerRegistry


def build_state(settings: Settings, summarizer: Summarizer | None = None) -> AppState:
    """Everything requests share, built from settings (no I/O beyond local files)."""
    tokenizers = TokenizerRegistry()
    models = load_registry(settings.models_file, settings.fallback_context_window)
    estimation = EstimationService(
        tokenizers, models, TokenCountCache(settings.token_cache_entries), settings.image_tokens
    )
    observed = Metrics()
    compaction = CompactionService(
        estimation,
        summarizer or initial_summarizer(settings, models),
        default_thinking=settings.summarizer_thinking,
        observer=observed,
    )
    db = create_db_engine(settings.database_url)
    return AppState(
        settings=settings,
        tokenizers=tokenizers,
        models=models,
        estimation=estimation,
        compaction=compaction,
        db=db,
        sessions=SessionService(session_factory(db), estimation, compaction),
        api_keys=parse_api_keys(settings.api_key_spec()),
        metrics=observed,
    )


def create_app(settings: Settings | None = None, summarizer: Summarizer | None = None) -> FastAPI:
    """The ASGI app; `uvicorn --factory app.main:create_app` calls this with no arguments."""
    settings = settings or Settings()
    state = build_state(settings, summarizer)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state.tokenizers.warm()
        if settings.migrate_on_start:
            await anyio.to_thread.run_sync(upgrade, settings.database_url)
        elif problem := await anyio.to_thread.run_sync(schema_problem, settings.database_url):
            # Serve anyway (health and stateless routes work); session routes answer 503.
            logging.getLogger("compactor.startup").error(problem)
        async with AsyncExitStack() as stack:
            stack.callback(state.db.dispose)
            if summarizer is None and needs_http_client(settings):
                # One shared client per run of the app; the stand-in returns at shutdown.
                client = await stack.enter_async_context(summarizer_http_client(settings))
                stack.callback(setattr, state.compaction, "summarizer", state.compaction.summarizer)
                retries = state.metrics.summarizer_retries
                provider = settings.summarizer
                state.compaction.summarizer = build_summarizer(
                    settings,
                    client,
                    state.models,
                    on_retry=lambda reason: retries.labels(provider, reason).inc(),
                )
            state.ready = True
            yield
            state.ready = False

    app = FastAPI(
        title="context-compactor",
        version=__version__,
        summary="Context management for LLM agents: estimate, decide, compact.",
        lifespan=lifespan,
    )
    app.state.compactor = state
    install_problem_handlers(app)
    install_problem_openapi(app)
    app.include_router(health.router)
    authenticated = [Depends(current_tenant)]
    app.include_router(history.router, dependencies=authenticated)
    app.include_router(sessions.router, dependencies=authenticated)
    app.include_router(system_prompt.router, dependencies=authenticated)
    app.include_router(metrics.router, dependencies=authenticated)
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_body_bytes,
        timeout_seconds=settings.body_timeout_seconds,
        max_pending_bytes=settings.max_pending_body_bytes,
    )
    # Added last, so it runs first: every answer (a 413 included) gets an id and a metric.
    app.add_middleware(RequestObservation, metrics=state.metrics)
    return app
