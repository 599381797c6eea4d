"""Building the proxy around the one upstream client the lifespan opens."""

from __future__ import annotations

from contextlib import AsyncExitStack

from app.api.state import AppState
from app.formats.vendor.apis import Upstream
from app.providers.upstream import upstream_http_client
from app.services.native.proxy_hook import NativeProxyEdits
from app.services.proxy.service import ProxyService
from app.services.proxy.session_binding import SessionBinding
from app.services.proxy.transparent import TransparentCompactor


async def open_proxy(state: AppState, stack: AsyncExitStack) -> None:
    """Opens the shared upstream client (closed with `stack`) and sets `state.proxy`."""
    settings = state.settings
    client = await stack.enter_async_context(
        upstream_http_client(
            settings.upstream_timeout_seconds, settings.upstream_connect_timeout_seconds
        )
    )
    cache = state.summary_cache
    state.proxy = ProxyService(
        upstream=client,
        upstream_urls={
            Upstream.OPENAI: settings.upstream_openai_url,
            Upstream.ANTHROPIC: settings.upstream_anthropic_url,
        },
        compactor=TransparentCompactor(state.estimation, state.compaction, cache, state.metrics),
        sessions=SessionBinding(state.sessions),
        observer=state.metrics,
        native=NativeProxyEdits(state.native, emulate=settings.native_edits == "emulate"),
    )
    stack.callback(setattr, state, "proxy", None)
