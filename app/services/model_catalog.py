"""The model names a deployment knows (SPEC §18): the registry with the operator's aliases
and policies, the windows an upstream publishes in its model list, and one log line per
name nothing knows.

Precedence of a window: the request's own, the operator's policy (COMPACTOR_CONFIG), the
upstream's model list (COMPACTOR_MODELS_FROM_UPSTREAM), the registry (by name, prefix or
alias), and last the fallback window.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Protocol

import anyio

from app.engine.models import ModelInfo, ModelRegistry, PublishedModel, WindowSource

log = logging.getLogger("compactor.models")

# Request-chosen names: remembered (for the once-per-name log line) up to a bound.
MAX_LOGGED_UNKNOWN = 1000
# An upstream listing more models than this is cut there (OpenRouter lists ~400).
MAX_PUBLISHED_MODELS = 20_000
_RESOLVED_CACHE_ENTRIES = 4096


class ModelListSource(Protocol):
    """One upstream's model list (an adapter in app.providers)."""

    @property
    def label(self) -> str:
        """Where the list comes from, for logs (a URL without credentials)."""
        ...

    async def fetch(self) -> Sequence[PublishedModel]:
        """The models listed now; raises on any failure (logged by the caller)."""
        ...


class ModelCatalog:
    """Resolves model names for counting: the registry, overlaid with published windows."""

    def __init__(self, registry: ModelRegistry) -> None:
        self.registry = registry
        self._published: dict[str, PublishedModel] = {}
        self._resolved: dict[str | None, ModelInfo] = {}
        self._logged: set[str] = set()

    @property
    def fallback_window(self) -> int:
        return self.registry.fallback_window

    @property
    def published(self) -> int:
        """How many model names the upstream's list currently holds."""
        return len(self._published)

    def resolve(self, model: str | None) -> ModelInfo:
        """The entry for `model`; an unknown name is logged once per process."""
        cached = self._resolved.get(model)
        if cached is not None:
            return cached
        info = self.registry.resolve(model)
        published = self._published.get(model) if model else None
        if published is not None and info.window_source is not WindowSource.CONFIG:
            info = self._with_published(info, published)
        if not info.known and model:
            self._log_unknown(model)
        if len(self._resolved) >= _RESOLVED_CACHE_ENTRIES:
            self._resolved.clear()
        self._resolved[model] = info
        return info

    def publish(self, models: Iterable[PublishedModel]) -> None:
        """Replaces the upstream's model list (a refresh)."""
        table: dict[str, PublishedModel] = {}
        for model in models:
            if len(table) >= MAX_PUBLISHED_MODELS:
                break
            table.setdefault(model.name, model)
        self._published = table
        self._resolved = {}

    def _with_published(self, info: ModelInfo, published: PublishedModel) -> ModelInfo:
        if not info.known and published.underlying:
            # A gateway alias (LiteLLM's model_name): count it as the model it stands for,
            # under the policy of both names (the requested name's wins).
            base = self.registry.resolve(published.underlying)
            if base.known:
                info = replace(base, policy=info.policy.over(base.policy))
                if info.window_source is WindowSource.REGISTRY:
                    info = replace(info, window_source=WindowSource.ALIAS)
        if published.context_window is None or info.window_source is WindowSource.CONFIG:
            return info
        return replace(
            info,
            context_window=published.context_window,
            max_output_tokens=published.max_output_tokens or info.max_output_tokens,
            window_source=WindowSource.UPSTREAM,
            known=True,
        )

    def _log_unknown(self, model: str) -> None:
        if model in self._logged or len(self._logged) > MAX_LOGGED_UNKNOWN:
            return
        self._logged.add(model)
        if len(self._logged) > MAX_LOGGED_UNKNOWN:
            log.warning(
                "more than %d unknown model names: further ones are not logged",
                MAX_LOGGED_UNKNOWN,
            )
            return
        log.warning(
            "unknown model %r: using the fallback window of %d tokens "
            "(COMPACTOR_FALLBACK_CONTEXT_WINDOW) unless a request gives context_window; "
            'name it in COMPACTOR_CONFIG ([models."%s"] context_window = ..., or an '
            "entry of [model_aliases]) or COMPACTOR_MODELS_FILE",
            model,
            self.fallback_window,
            model,
            extra={"model": model, "fallback_window": self.fallback_window},
        )


class UpstreamModelWindows:
    """Keeps the catalog's published windows fresh from the upstreams' model lists."""

    def __init__(
        self,
        catalog: ModelCatalog,
        sources: Sequence[ModelListSource],
        refresh_seconds: float,
    ) -> None:
        self.catalog = catalog
        self.sources = tuple(sources)
        self.refresh_seconds = refresh_seconds
        # The last list each source gave: a source that fails keeps its previous one.
        self._last: list[Sequence[PublishedModel]] = [() for _ in self.sources]

    async def refresh(self) -> int:
        """Reads every source once; a failed source is logged and keeps its old entries.

        Returns how many model names are published afterwards."""
        for i, source in enumerate(self.sources):
            try:
                listed = await source.fetch()
            except Exception as exc:  # any failure: logged, never fatal
                log.warning(
                    "could not read the model list at %s: %s (keeping the %d models read before)",
                    source.label,
                    " ".join(str(exc).split()) or type(exc).__name__,
                    len(self._last[i]),
                    extra={"source": source.label},
                )
                continue
            self._last[i] = listed
            log.info(
                "read %d models from %s (%d with a context window)",
                len(listed),
                source.label,
                sum(1 for m in listed if m.context_window is not None),
                extra={"source": source.label},
            )
        self.catalog.publish(model for listed in self._last for model in listed)
        return self.catalog.published

    async def run(self, first_read: anyio.Event | None = None) -> None:
        """Reads now, then every `refresh_seconds` until cancelled; sets `first_read`
        after the first read."""
        while True:
            await self.refresh()
            if first_read is not None:
                first_read.set()
                first_read = None
            await anyio.sleep(self.refresh_seconds)
