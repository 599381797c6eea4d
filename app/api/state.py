"""What the lifespan builds once and every request shares."""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.models import ModelRegistry
from app.services.compaction import CompactionService
from app.services.estimation import EstimationService
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry


@dataclass
class AppState:
    settings: Settings
    tokenizers: TokenizerRegistry
    models: ModelRegistry
    estimation: EstimationService
    compaction: CompactionService
    ready: bool = False
