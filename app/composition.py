"""Composition root: settings → summarizer, outbound HTTP client, services, app state.

The one place that chooses implementations. `build_state` constructs everything requests
share; `running_state` gives it a lifetime (opens the outbound client, warms tokenizers,
migrates, disposes). The app lifespan, the CLI and tests all go through these two.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from datetime import timedelta

import anyio
import httpx
from sqlalchemy.orm import Session, sessionmaker

from app import __version__
from app.api.auth import check_metrics_key, parse_api_keys
from app.api.metrics import Metrics
from app.api.state import AppState
from app.engine.clearing import DEFAULT_CLEAR_STEP_TOKENS
from app.engine.compaction.marker import FOREIGN_SUMMARY_PATTERNS, SummaryMarker
from app.engine.counting.count_cache import TokenCountCache
from app.engine.extractive.summarizer import ExtractiveSummarizer
from app.engine.models import ModelRegistry
from app.engine.ports import Summarizer
from app.formats.apis.messages import MESSAGES
from app.formats.apis.protocol import Upstream
from app.formats.apis.responses import RESPONSES
from app.providers import (
    PROVIDERS,
    AnthropicSummarizer,
    OpenAICompatibleSummarizer,
    Provider,
    ProviderSpec,
    RetryPolicy,
    Wire,
)
from app.providers.http import CONNECT_TIMEOUT_SECONDS
from app.providers.model_lists import LiteLLMModelInfo, OpenAIModelList
from app.providers.upstream import upstream_http_client
from app.registry import load_registry
from app.services.compaction import CompactionService
from app.services.cost_ledger import CostLedger
from app.services.estimation import EstimationService
from app.services.inspector.logins import InspectorLogins
from app.services.model_catalog import ModelCatalog, ModelListSource, UpstreamModelWindows
from app.services.native.endpoints import VendorEndpoints
from app.services.native.proxy_stage import (
    MessagesHandler,
    NativeHandler,
    NativeStage,
    ResponsesHandler,
)
from app.services.native.services import NativeApis, NativeServices, build_native_services
from app.services.ports import LeaseStore, ResendMemo, SummaryStore
from app.services.proxy.ahead_leases import AheadLeases
from app.services.proxy.decisions import RecentDecisions
from app.services.proxy.prepare_ahead import BackgroundSummaries, PrepareAhead, PrepareAheadPolicy
from app.services.proxy.resend_memo import ResendMemos, SharedResendMemos
from app.services.proxy.service import ProxyService
from app.services.proxy.session_binding import SessionBinding, SessionStage
from app.services.proxy.summary_cache import PrefixMemo, SummaryCache
from app.services.proxy.transparent import TransparentCompactor, TransparentStage
from app.services.sessions.prepare_ahead import SessionPrepareAhead
from app.services.sessions.service import SessionService
from app.services.sessions.transactions import SessionStore
from app.services.stateless import StatelessHistory
from app.services.system_prompt import SystemPromptService
from app.services.tracing import NullTracer, TracedSummarizer, Tracer
from app.services.workspace import WorkspaceReader, parse_workspace_roots
from app.settings import Settings
from app.store.database import create_db_engine, session_factory
from app.store.leases import SqlLeases
from app.store.migrate import schema_problem, upgrade
from app.store.summaries import SqlSummaryStore
from app.store.transactions import SessionDatabase
from app.tokenizers.bpe import TokenizerRegistry

# The model half of a summarizer, by the wire its provider speaks.
_MODELS: dict[Wire, type[OpenAICompatibleSummarizer | AnthropicSummarizer]] = {
    Wire.CHAT_COMPLETIONS: OpenAICompatibleSummarizer,
    Wire.ANTHROPIC_MESSAGES: AnthropicSummarizer,
}


class SummarizerConfigError(ValueError):
    """The summarizer settings cannot work; the service refuses to start."""


@dataclass(frozen=True, slots=True)
class HttpSummarizerConfig:
    """A validated HTTP summarizer: the named provider, its endpoint and the model."""

    spec: ProviderSpec
    provider: Provider
    model: str


def needs_http_client(settings: Settings) -> bool:
    """True when the configured summarizer calls a model over HTTP."""
    return settings.summarizer != "extractive"


def http_summarizer_config(settings: Settings) -> HttpSummarizerConfig:
    """Checks the settings of an HTTP summarizer; raises SummarizerConfigError if unusable."""
    name = settings.summarizer
    if name == "extractive":
        raise SummarizerConfigError("the extractive summarizer calls no provider")
    spec = PROVIDERS[name]
    model = (settings.summarizer_model or "").strip()
    if not model:
        raise SummarizerConfigError(
            f"COMPACTOR_SUMMARIZER={name} needs a model: set COMPACTOR_SUMMARIZER_MODEL "
            "(for example gpt-4o-mini or claude-sonnet-4-5), or use "
            "COMPACTOR_SUMMARIZER=extractive"
        )
    base_url = (settings.summarizer_base_url or spec.default_base_url or "").strip().rstrip("/")
    if not base_url:
        raise SummarizerConfigError(
            f"COMPACTOR_SUMMARIZER={name} needs to know where the server is: set "
            f"COMPACTOR_SUMMARIZER_BASE_URL (for example {spec.base_url_example})"
        )
    url = httpx.URL(base_url)
    if url.scheme not in ("http", "https") or not url.host:
        raise SummarizerConfigError(
            f"COMPACTOR_SUMMARIZER_BASE_URL must be an http(s) URL, got {base_url!r}"
        )
    key = settings.summarizer_api_key.get_secret_value() if settings.summarizer_api_key else None
    if not key and spec.needs_key(base_url):
        raise SummarizerConfigError(
            f"COMPACTOR_SUMMARIZER={name} with {url.host} needs an API key: set "
            "COMPACTOR_SUMMARIZER_API_KEY"
        )
    provider = spec.configure(
        base_url=base_url,
        api_key=key,
        deployment=(settings.summarizer_deployment or model).strip(),
        api_version=settings.summarizer_api_version,
    )
    return HttpSummarizerConfig(spec, provider, model)


def check_settings(settings: Settings, *, summarizer: bool = True) -> None:
    """Refuses settings that cannot work before anything starts (no I/O but local files);
    `summarizer=False` skips the summarizer's, for an app given its summarizer."""
    if summarizer and needs_http_client(settings):
        http_summarizer_config(settings)
    keys = parse_api_keys(settings.api_key_spec())
    check_metrics_key(settings.metrics_key_value(), keys)
    model_registry(settings)


def model_registry(settings: Settings) -> ModelRegistry:
    """The registry with the operator's extra file, aliases and per-model policies."""
    return load_registry(
        settings.models_file,
        settings.fallback_context_window,
        aliases=settings.model_aliases,
        policies=settings.model_policies(),
    )


def build_tracer() -> Tracer:
    """OpenTelemetry tracing when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (OTLP/HTTP); else
    the null tracer, and no OpenTelemetry module is imported at all."""
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        return NullTracer()
    from app.providers.otel_tracing import otlp_tracer

    return otlp_tracer()


def traceparent_hook(tracer: Tracer) -> Callable[[httpx.Request], Awaitable[None]]:
    """An httpx request hook writing the current span's `traceparent` on each request
    (the summarizer's calls, the proxy's upstream calls): their traces join the request's."""

    async def inject(request: httpx.Request) -> None:
        carrier: dict[str, str] = {}
        tracer.inject(carrier)
        for name, value in carrier.items():
            request.headers[name] = value

    return inject


def outbound_client(settings: Settings, tracer: Tracer | None = None) -> httpx.AsyncClient:
    """The one client outbound model calls share; opened and closed by `running_state`."""
    hooks = {"request": [traceparent_hook(tracer)]} if tracer is not None and tracer.enabled else {}
    return httpx.AsyncClient(
        timeout=httpx.Timeout(settings.summarizer_timeout_seconds, connect=CONNECT_TIMEOUT_SECONDS),
        follow_redirects=False,
        headers={"user-agent": f"context-compactor/{__version__}"},
        event_hooks=hooks,
    )


def build_summarizer(
    settings: Settings,
    http_client: httpx.AsyncClient | None = None,
    models: ModelRegistry | None = None,
    on_retry: Callable[[str], None] | None = None,
) -> Summarizer:
    """The configured summarizer; the extractive one needs no model and no network.

    HTTP summarizers need an open `http_client`; their window, output limit and thinking
    levels come from the model registry.
    """
    if not needs_http_client(settings):
        return ExtractiveSummarizer()
    config = http_summarizer_config(settings)
    if http_client is None:
        raise SummarizerConfigError(
            f"the {config.provider.name} summarizer needs an open HTTP client "
            "(the app lifespan or `running_state` opens it)"
        )
    registry = models or model_registry(settings)
    entry = registry.resolve(config.model)
    if entry.context_window is None:
        # An unregistered model (a local Ollama name, say) still has a window: assume the
        # fallback one, so long histories are folded in chunks instead of overflowing it.
        entry = replace(entry, context_window=registry.fallback_window)
    return _MODELS[config.spec.wire](
        http_client,
        model=config.model,
        entry=entry,
        provider=config.provider,
        timeout_seconds=settings.summarizer_timeout_seconds,
        retry=RetryPolicy(
            max_retries=settings.summarizer_max_retries,
            on_retry=on_retry,
            max_reply_bytes=settings.summarizer_max_reply_bytes,
        ),
    )


@dataclass(frozen=True)
class SharedState:
    """What replicas share besides sessions: the resend memos, the leases and the
    summary cache's store, with what closes their connection."""

    resend_memos: ResendMemo
    leases: LeaseStore
    summaries: SummaryStore
    close: Callable[[], Awaitable[None]]


async def _nothing_to_close() -> None:
    return None


def shared_state(settings: Settings, sessions: sessionmaker[Session]) -> SharedState:
    """Per-process memos, database leases and summary cache; with `COMPACTOR_REDIS_URL`,
    memos shared through Redis (behind this process's own), leases in Redis, and the
    summary cache there when `COMPACTOR_PROXY_SUMMARY_CACHE_STORE=redis`. No I/O: the
    Redis clients connect on first use."""
    in_database = SqlSummaryStore(sessions, settings.proxy_summary_cache_entries)
    if settings.redis_url is None:
        return SharedState(ResendMemos(), SqlLeases(sessions), in_database, _nothing_to_close)
    try:
        from app.store.redis_connection import RedisConnection
        from app.store.redis_leases import RedisLeases
        from app.store.redis_memos import RedisResendMemo
        from app.store.redis_summaries import RedisSummaryStore
    except ImportError as exc:  # pragma: no cover - the extra is in every image and venv
        raise RuntimeError(
            "COMPACTOR_REDIS_URL is set but the `redis` package is not installed: "
            "pip install 'context-compactor[redis]'"
        ) from exc
    connection = RedisConnection(
        settings.redis_url.get_secret_value(),
        prefix=settings.redis_key_prefix,
        timeout_seconds=settings.redis_timeout_seconds,
    )
    memos = SharedResendMemos(
        ResendMemos(), RedisResendMemo(connection, settings.redis_memo_ttl_seconds)
    )
    summaries: SummaryStore = in_database
    if settings.proxy_summary_cache_store == "redis":
        summaries = RedisSummaryStore(connection, settings.proxy_summary_cache_entries)
    return SharedState(memos, RedisLeases(connection), summaries, connection.aclose)


def build_state(
    settings: Settings,
    *,
    summarizer: Summarizer | None = None,
    tokenizers: TokenizerRegistry | None = None,
    metrics: Metrics | None = None,
    outbound: httpx.AsyncClient | None = None,
    tracer: Tracer | None = None,
) -> AppState:
    """Everything requests share, built from settings (no I/O beyond local files).

    An HTTP summarizer needs `outbound` open; `running_state` opens it. A given
    `summarizer` or `tokenizers` is used as is (tests share one warmed registry).
    """
    tokenizers = tokenizers or TokenizerRegistry()
    observed = metrics or Metrics()
    models = model_registry(settings)
    if summarizer is None:
        retries = observed.summarizer_retries
        name = settings.summarizer
        summarizer = build_summarizer(
            settings, outbound, models, on_retry=lambda reason: retries.labels(name, reason).inc()
        )
    catalog = ModelCatalog(models)
    tracer = tracer or NullTracer()
    if tracer.enabled:
        summarizer = TracedSummarizer(summarizer, tracer)
    estimation = EstimationService(
        tokenizers, catalog, TokenCountCache(settings.token_cache_entries), settings.image_tokens
    )
    marker = SummaryMarker(foreign_patterns=(*FOREIGN_SUMMARY_PATTERNS, *settings.summary_patterns))
    compaction = CompactionService(
        estimation,
        summarizer,
        default_thinking=settings.summarizer_thinking,
        marker=marker,
        observer=observed,
        tracer=tracer,
        clear_step_tokens=0 if settings.clearing == "exact" else DEFAULT_CLEAR_STEP_TOKENS,
    )
    db = create_db_engine(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    store = session_factory(db)
    shared = shared_state(settings, store)
    # The cost ledger (SPEC §15) on the session store; None when COMPACTOR_COST_LEDGER=false.
    costs = CostLedger(SessionStore(SessionDatabase(store)), catalog, observer=observed)
    ledger = costs if settings.cost_ledger else None
    native = build_native_services(
        estimation,
        compaction,
        settings.state_key_bytes(),
        native_apis(),
        clear_step_tokens=0 if settings.native_clearing == "exact" else DEFAULT_CLEAR_STEP_TOKENS,
        ledger=ledger,
    )
    retention = timedelta(hours=settings.idempotency_retention_hours)
    sessions = SessionService(
        SessionDatabase(store),
        estimation,
        compaction,
        # A session's summary says its history is searchable only while /mcp serves it.
        marker=replace(marker, recall_hint=settings.mcp),
        idempotency_retention=retention,
        compaction_lease=timedelta(seconds=settings.compaction_lease_seconds),
        ledger=costs,
        job_retention=timedelta(hours=settings.compaction_job_retention_hours),
    )
    if ledger is None:
        sessions.compactor.ledger = None  # summary calls of sessions: not recorded either
    api_keys = parse_api_keys(settings.api_key_spec())
    return AppState(
        settings=settings,
        tokenizers=tokenizers,
        models=catalog,
        estimation=estimation,
        compaction=compaction,
        close_store=db.dispose,
        sessions=sessions,
        system_prompts=SystemPromptService(
            estimation, WorkspaceReader(parse_workspace_roots(settings.workspace_roots))
        ),
        api_keys=api_keys,
        metrics=observed,
        summary_cache=SummaryCache(shared.summaries),
        native=native,
        stateless=StatelessHistory(estimation, compaction, native.responses, ledger),
        vendor_endpoints=VendorEndpoints(native, sessions, estimation),
        # Without a configured key, logins last as long as this process (as the state does).
        ui_logins=InspectorLogins(
            SessionDatabase(store),
            api_keys,
            settings.state_key_bytes() or secrets.token_bytes(32),
            settings.ui_login_seconds,
        ),
        outbound=outbound,
        tracer=tracer,
        recent_decisions=RecentDecisions(
            settings.inspector_recent_requests, with_content=settings.inspector_show_content
        ),
        resend_memos=shared.resend_memos,
        leases=shared.leases,
        close_shared=shared.close,
    )


@asynccontextmanager
async def running_state(
    settings: Settings,
    *,
    summarizer: Summarizer | None = None,
    tokenizers: TokenizerRegistry | None = None,
    metrics: Metrics | None = None,
    tracer: Tracer | None = None,
) -> AsyncIterator[AppState]:
    """The app state for the block: outbound client open, tokenizers warm, schema migrated
    when `settings.migrate_on_start`, `ready` while the block runs. A `tracer`'s spans
    are flushed when the block ends (it is shut down at exit)."""
    async with AsyncExitStack() as stack:
        flush = getattr(tracer, "force_flush", None)
        if flush is not None:
            stack.callback(flush)
        outbound = None
        if summarizer is None and needs_http_client(settings):
            outbound = await stack.enter_async_context(outbound_client(settings, tracer))
        state = build_state(
            settings,
            summarizer=summarizer,
            tokenizers=tokenizers,
            metrics=metrics,
            outbound=outbound,
            tracer=tracer,
        )
        stack.callback(state.close_store)
        stack.push_async_callback(state.close_shared)
        state.tokenizers.warm()
        if settings.migrate_on_start:
            await anyio.to_thread.run_sync(upgrade, settings.database_url)
        elif problem := await anyio.to_thread.run_sync(schema_problem, settings.database_url):
            # Serve anyway (health and stateless routes work); session routes answer 503.
            logging.getLogger("compactor.startup").error(problem)
        # Closed before the store: running compaction jobs are cancelled and marked
        # abandoned first.
        await stack.enter_async_context(state.sessions.jobs)
        if state.native.ephemeral_key:
            # Compaction blocks and items it hands out (and inspector logins) stop verifying
            # after a restart and on other replicas: worth a line in the log, not a refusal.
            logging.getLogger("compactor.startup").warning(
                "COMPACTOR_STATE_KEY is not set: compaction state and inspector logins use "
                "a key of this process only; set it (the same on every replica) to keep "
                "them valid (`compactor keygen` makes one)"
            )
        await open_proxy(state, stack)
        if settings.models_from_upstream:
            await read_upstream_models(state, stack)
        state.ready = True
        try:
            yield state
        finally:
            state.ready = False


@asynccontextmanager
async def running_summarizer(
    settings: Settings, models: ModelRegistry | None = None
) -> AsyncIterator[Summarizer]:
    """The configured summarizer with its HTTP client open for the block (one-shot use)."""
    if not needs_http_client(settings):
        yield ExtractiveSummarizer()
        return
    async with outbound_client(settings) as client:
        yield build_summarizer(settings, client, models)


async def open_proxy(state: AppState, stack: AsyncExitStack) -> None:
    """Opens the shared upstream client (closed with `stack`) and sets `state.proxy`."""
    settings = state.settings
    log_upstreams(settings)
    # Closed before the upstream client and the store: background summaries are
    # cancelled first, and a cancelled one writes nothing.
    background = await stack.enter_async_context(BackgroundSummaries())
    ahead = prepare_ahead(state, background)
    compactor = state.sessions.compactor
    compactor.ahead = session_prepare_ahead(state, background)
    stack.callback(setattr, compactor, "ahead", None)
    client = await stack.enter_async_context(
        upstream_http_client(
            settings.upstream_timeout_seconds, settings.upstream_connect_timeout_seconds
        )
    )
    state.proxy = ProxyService(
        upstream=client,
        # Normalized once (app.settings): either form of each variable, with or without
        # `/v1`, gives the URL the proxy appends its API paths to.
        upstream_urls={
            Upstream.OPENAI: settings.upstream_openai_base,
            Upstream.ANTHROPIC: settings.upstream_anthropic_root,
            Upstream.GEMINI: settings.upstream_gemini_url,
        },
        stages=proxy_stages(state, ahead),
        observer=state.metrics,
        tracer=state.tracer,
        decisions=state.recent_decisions,
        ledger=state.sessions.ledger if settings.cost_ledger else None,
    )
    stack.callback(setattr, state, "proxy", None)


def native_apis() -> NativeApis:
    """The vendor APIs with native context management, with their wire halves."""
    return NativeApis(
        messages=MESSAGES,
        messages_wire=MESSAGES.context_management,
        responses=RESPONSES,
        responses_wire=RESPONSES.context_management,
    )


def prepare_ahead(state: AppState, background: BackgroundSummaries) -> PrepareAhead | None:
    """Summaries prepared ahead of the threshold (SPEC §16); None when `off`."""
    settings = state.settings
    ratio = settings.prepare_ahead_ratio
    if ratio == "off":
        return None
    return PrepareAhead(
        PrepareAheadPolicy(ratio=ratio, wait_seconds=settings.prepare_ahead_wait_seconds),
        background,
        state.estimation,
        state.compaction,
        state.summary_cache,
        PrefixMemo(),
        observer=state.metrics,
        ledger=state.sessions.ledger if settings.cost_ledger else None,
        # In the store replicas share (the database, or Redis when configured).
        leases=AheadLeases(state.leases, settings.prepare_ahead_lease_seconds),
    )


def session_prepare_ahead(
    state: AppState, background: BackgroundSummaries
) -> SessionPrepareAhead | None:
    """Sessions' compactions prepared ahead of the threshold (SPEC §16); None when `off`."""
    settings = state.settings
    ratio = settings.prepare_ahead_ratio
    if ratio == "off":
        return None
    return SessionPrepareAhead(
        ratio, settings.prepare_ahead_wait_seconds, background, observer=state.metrics
    )


def proxy_stages(
    state: AppState, ahead: PrepareAhead | None = None
) -> list[NativeStage | SessionStage | TransparentStage]:
    """The proxy's pipeline, in order: native edits → session binding → transparent."""
    native: NativeServices = state.native
    apis = native.apis
    handlers: dict[str, NativeHandler] = {
        apis.messages.name: MessagesHandler(native.anthropic, apis.messages_wire),
        apis.responses.name: ResponsesHandler(
            native.responses, apis.responses_wire, state.sessions
        ),
    }
    compactor = TransparentCompactor(
        state.estimation,
        state.compaction,
        state.summary_cache,
        state.metrics,
        memos=state.resend_memos,
        tracer=state.tracer,
        ahead=ahead,
        ledger=state.sessions.ledger if state.settings.cost_ledger else None,
    )
    return [
        NativeStage(handlers, emulate=state.settings.native_edits == "emulate"),
        SessionStage(SessionBinding(state.sessions, state.settings.bound_compaction_wait_seconds)),
        TransparentStage(compactor),
    ]


def log_upstreams(settings: Settings) -> None:
    """One line per configured upstream: where its routes go, after normalization."""
    startup = logging.getLogger("compactor.startup")
    routes = (
        ("COMPACTOR_UPSTREAM_OPENAI_URL", settings.upstream_openai_base, "/chat/completions"),
        ("COMPACTOR_UPSTREAM_ANTHROPIC_URL", settings.upstream_anthropic_root, "/v1/messages"),
    )
    for variable, base, example in routes:
        if base is not None:
            where = httpx.URL(base + example).copy_with(userinfo=b"", query=None)
            startup.info(
                "proxy upstream from %s: requests go to %s and the like",
                variable,
                where,
                extra={"variable": variable, "upstream": str(where)},
            )


# The start waits this long for the first read of the upstreams' model lists; the read
# goes on in the background if it takes longer.
MODEL_LIST_START_WAIT_SECONDS = 5.0


def model_list_sources(settings: Settings, client: httpx.AsyncClient) -> list[ModelListSource]:
    """The model lists of the configured upstreams (each root once)."""
    key = settings.upstream_models_api_key
    secret = key.get_secret_value() if key else None
    sources: list[ModelListSource] = []
    roots: list[str] = []
    bases = [
        (settings.upstream_openai_root, settings.upstream_openai_base),
        (settings.upstream_anthropic_root, (settings.upstream_anthropic_root or "") + "/v1"),
    ]
    for root, base in bases:
        if root is None or base is None or root in roots:
            continue
        roots.append(root)
        sources.append(OpenAIModelList(client, base + "/models", secret))
        sources.append(LiteLLMModelInfo(client, root + "/model/info", secret))
    return sources


async def read_upstream_models(state: AppState, stack: AsyncExitStack) -> None:
    """Reads the upstreams' model lists now (bounded wait) and again every
    `models_refresh_seconds` in the background, until `stack` closes."""
    settings = state.settings
    client = await stack.enter_async_context(
        httpx.AsyncClient(
            timeout=httpx.Timeout(30.0, connect=settings.upstream_connect_timeout_seconds),
            follow_redirects=False,
            headers={"user-agent": f"context-compactor/{__version__}"},
        )
    )
    sources = model_list_sources(settings, client)
    if not sources:
        logging.getLogger("compactor.startup").warning(
            "COMPACTOR_MODELS_FROM_UPSTREAM is set but no upstream URL is configured"
        )
        return
    windows = UpstreamModelWindows(state.models, sources, settings.models_refresh_seconds)
    state.model_windows = windows
    first_read = anyio.Event()
    tasks = await stack.enter_async_context(anyio.create_task_group())
    stack.callback(tasks.cancel_scope.cancel)
    tasks.start_soon(windows.run, first_read)
    with anyio.move_on_after(MODEL_LIST_START_WAIT_SECONDS):
        await first_read.wait()
