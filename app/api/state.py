"""What the lifespan builds once and every request shares.

To share something new (a service, a client with a lifetime): add a field to `AppState`
and build it in `app.composition.build_state` (open and close a client in
`running_state`). Routes reach it through the `Annotated` aliases of `app.api.deps`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

import httpx

from app.api.metrics import Metrics
from app.services.compaction import CompactionService
from app.services.estimation import EstimationService
from app.services.inspector.logins import InspectorLogins
from app.services.model_catalog import ModelCatalog, UpstreamModelWindows
from app.services.native.endpoints import VendorEndpoints
from app.services.native.services import NativeServices
from app.services.ports import LeaseStore, ResendMemo
from app.services.proxy.decisions import RecentDecisions
from app.services.proxy.resend_memo import ResendMemos
from app.services.proxy.service import ProxyService
from app.services.proxy.summary_cache import SummaryCache
from app.services.sessions.service import SessionService
from app.services.stateless import StatelessHistory
from app.services.system_prompt import SystemPromptService
from app.services.tracing import NullTracer, Tracer
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry

if TYPE_CHECKING:
    from app.api.mcp import McpEndpoint


async def _nothing_to_close() -> None:
    return None


@dataclass
class AppState:
    settings: Settings
    tokenizers: TokenizerRegistry
    # The registry with the operator's aliases and policies, and the upstream's windows.
    models: ModelCatalog
    estimation: EstimationService
    compaction: CompactionService
    # Closes the database pool at shutdown (the API never touches the database itself).
    close_store: Callable[[], None]
    sessions: SessionService
    system_prompts: SystemPromptService
    metrics: Metrics
    # The proxy's summaries of resent history prefixes (SPEC §10), in the store.
    summary_cache: SummaryCache
    native: NativeServices
    # The stateless /estimate and /compact use cases.
    stateless: StatelessHistory
    # The vendors' counting and standalone-compaction endpoints.
    vendor_endpoints: VendorEndpoints
    # The inspector's browser logins (SPEC §9), in the store.
    ui_logins: InspectorLogins
    # Bearer key → tenant; empty means no authentication (loopback-only by default).
    api_keys: dict[str, str] = field(default_factory=dict)
    # The shared client of outbound model calls; None when nothing configured calls out.
    outbound: httpx.AsyncClient | None = None
    ready: bool = False
    # Proxy mode (SPEC §10): built in `running_state` around the shared upstream client.
    proxy: ProxyService | None = None
    # Refreshes `models` from the upstreams' model lists (COMPACTOR_MODELS_FROM_UPSTREAM).
    model_windows: UpstreamModelWindows | None = None
    # Spans (SPEC §18); the null tracer unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
    tracer: Tracer = field(default_factory=NullTracer)
    # The inspector's recent stateless proxy decisions (in memory, per process).
    recent_decisions: RecentDecisions = field(default_factory=RecentDecisions)
    # What the proxy remembers of bodies it saw (per process, or shared via Redis).
    resend_memos: ResendMemo = field(default_factory=ResendMemos)
    # Leases of background work, one replica at a time (database or Redis); None only
    # in a state built without a store.
    leases: LeaseStore | None = None
    # Closes the connection to the shared state (Redis) at shutdown.
    close_shared: Callable[[], Awaitable[None]] = field(default=_nothing_to_close)


class LifespanState(TypedDict):
    """What the app lifespan yields; Starlette hands it to every request as `request.state`."""

    compactor: AppState
    # The MCP endpoint of this lifespan run (app.api.mcp); None when COMPACTOR_MCP is off.
    mcp: McpEndpoint | None
