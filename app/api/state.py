"""What the lifespan builds once and every request shares."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine

from app.api.metrics import Metrics
from app.engine.models import ModelRegistry
from app.services.compaction import CompactionService
from app.services.estimation import EstimationService
from app.services.native.services import NativeServices
from app.services.proxy.service import ProxyService
from app.services.sessions.service import SessionService
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry


@dataclass
class AppState:
    settings: Settings
    tokenizers: TokenizerRegistry
    models: ModelRegistry
    estimation: EstimationService
    compaction: CompactionService
    db: Engine
    sessions: SessionService
    metrics: Metrics
    native: NativeServices
    # Bearer key → tenant; empty means no authentication (loopback-only by default).
    api_keys: dict[str, str] = field(default_factory=dict)
    ready: bool = False
    # Proxy mode (SPEC §10): built in the lifespan around the shared upstream client.
    proxy: ProxyService | None = None
