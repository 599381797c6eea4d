"""Which summarizer the service uses, from configuration only (never from a request)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

import httpx

from app import __version__
from app.engine.errors import SummarizerUnavailableError
from app.engine.extractive.summarizer import ExtractiveSummarizer
from app.engine.models import ModelRegistry
from app.engine.ports import Summarizer, SummarizerInfo, SummaryRequest, SummaryResult
from app.providers import anthropic, openai_compat
from app.providers.http import CONNECT_TIMEOUT_SECONDS, RetryPolicy, registry_info
from app.registry import load_registry
from app.settings import Settings

_DEFAULT_BASE_URLS = {
    "openai": openai_compat.DEFAULT_BASE_URL,
    "anthropic": anthropic.DEFAULT_BASE_URL,
}


class SummarizerConfigError(ValueError):
    """The summarizer settings cannot work; the service refuses to start."""


@dataclass(frozen=True, slots=True)
class HttpSummarizerConfig:
    """A validated OpenAI-compatible or Anthropic summarizer configuration."""

    provider: str
    model: str
    base_url: str
    api_key: str | None


def needs_http_client(settings: Settings) -> bool:
    """True when the configured summarizer calls a model over HTTP."""
    return settings.summarizer != "extractive"


def http_summarizer_config(settings: Settings) -> HttpSummarizerConfig:
    """Checks the settings of an HTTP summarizer; raises SummarizerConfigError if unusable."""
    provider = settings.summarizer
    model = (settings.summarizer_model or "").strip()
    if not model:
        raise SummarizerConfigError(
            f"COMPACTOR_SUMMARIZER={provider} needs a model: set COMPACTOR_SUMMARIZER_MODEL "
            "(for example gpt-4o-mini or claude-sonnet-4-5), or use "
            "COMPACTOR_SUMMARIZER=extractive"
        )
    default_url = _DEFAULT_BASE_URLS[provider]
    base_url = (settings.summarizer_base_url or default_url).strip().rstrip("/")
    url = httpx.URL(base_url)
    if url.scheme not in ("http", "https") or not url.host:
        raise SummarizerConfigError(
            f"COMPACTOR_SUMMARIZER_BASE_URL must be an http(s) URL, got {base_url!r}"
        )
    key = settings.summarizer_api_key.get_secret_value() if settings.summarizer_api_key else None
    if not key and url.host == httpx.URL(default_url).host:
        raise SummarizerConfigError(
            f"COMPACTOR_SUMMARIZER={provider} with {url.host} needs an API key: set "
            "COMPACTOR_SUMMARIZER_API_KEY"
        )
    return HttpSummarizerConfig(provider, model, base_url, key or None)


def summarizer_http_client(settings: Settings) -> httpx.AsyncClient:
    """The one client every summary call shares; opened and closed by the app lifespan."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(settings.summarizer_timeout_seconds, connect=CONNECT_TIMEOUT_SECONDS),
        follow_redirects=False,
        headers={"user-agent": f"context-compactor/{__version__}"},
    )


def build_summarizer(
    settings: Settings,
    http_client: httpx.AsyncClient | None = None,
    models: ModelRegistry | None = None,
    on_retry: Callable[[str], None] | None = None,
) -> Summarizer:
    """The configured summarizer; the extractive one needs no model and no network.

    OpenAI-compatible and Anthropic summarizers need the shared `http_client`; their
    window, output limit and thinking levels come from the model registry.
    """
    if not needs_http_client(settings):
        return ExtractiveSummarizer()
    config = http_summarizer_config(settings)
    if http_client is None:
        raise SummarizerConfigError(
            f"the {config.provider} summarizer needs the shared HTTP client of the app lifespan"
        )
    registry = models or load_registry(settings.models_file, settings.fallback_context_window)
    entry = registry.resolve(config.model)
    if entry.context_window is None:
        # An unregistered model (a local Ollama name, say) still has a window: assume the
        # fallback one, so long histories are folded in chunks instead of overflowing it.
        entry = replace(entry, context_window=registry.fallback_window)
    retry = RetryPolicy(
        max_retries=settings.summarizer_max_retries,
        on_retry=on_retry,
        max_reply_bytes=settings.summarizer_max_reply_bytes,
    )
    summarizer_class: type[anthropic.AnthropicSummarizer | openai_compat.OpenAICompatibleSummarizer]
    if config.provider == "anthropic":
        summarizer_class = anthropic.AnthropicSummarizer
    else:
        summarizer_class = openai_compat.OpenAICompatibleSummarizer
    return summarizer_class(
        http_client,
        model=config.model,
        entry=entry,
        base_url=config.base_url,
        api_key=config.api_key,
        timeout_seconds=settings.summarizer_timeout_seconds,
        retry=retry,
    )


@asynccontextmanager
async def running_summarizer(
    settings: Settings, models: ModelRegistry | None = None
) -> AsyncIterator[Summarizer]:
    """The configured summarizer with its HTTP client open for the block, for one-shot
    callers such as the CLI (the app's lifespan keeps one client for its whole run)."""
    if not needs_http_client(settings):
        yield ExtractiveSummarizer()
        return
    async with summarizer_http_client(settings) as client:
        yield build_summarizer(settings, client, models)


def initial_summarizer(settings: Settings, models: ModelRegistry) -> Summarizer:
    """What the app holds before its lifespan starts: the extractive summarizer, or, for
    an HTTP summarizer, a validated stand-in until the lifespan opens the client."""
    if not needs_http_client(settings):
        return ExtractiveSummarizer()
    config = http_summarizer_config(settings)
    return SummarizerNotStarted(
        registry_info(config.provider, config.model, models.resolve(config.model))
    )


class SummarizerNotStarted:
    """Stands in for an HTTP summarizer outside the app lifespan (no client is open)."""

    def __init__(self, info: SummarizerInfo) -> None:
        self._info = info

    @property
    def info(self) -> SummarizerInfo:
        return self._info

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Always fails: the shared HTTP client only exists while the app is running."""
        raise SummarizerUnavailableError(
            "the service's HTTP client is not open: run the app with its lifespan",
            provider=self._info.provider,
            model=self._info.model,
        )
