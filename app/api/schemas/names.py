"""The names the HTTP contract accepts, taken from the registries that define them and
never restated: a format, tokenizer or strategy that is registered appears here (and in
the OpenAPI document's enums) with no edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from app.engine.compaction.strategy import CompactionStep
from app.formats.registry import FORMATS
from app.services.estimation import TOKENIZER_CHOICES
from app.services.history import AUTO_TOKENIZER
from app.services.strategies.registry import STRATEGIES

if TYPE_CHECKING:
    # A type checker cannot read a Literal built at run time: to it they are strings
    # (what they are at run time too, checked by pydantic against the registries).
    Format = str
    TokenizerName = str
    Strategy = str
    AppliedStep = str
else:
    Format = Literal[FORMATS.names]
    TokenizerName = Literal[TOKENIZER_CHOICES]
    Strategy = Literal[STRATEGIES.names]
    AppliedStep = Literal[tuple(step.value for step in CompactionStep)]

DEFAULT_TOKENIZER = AUTO_TOKENIZER
DEFAULT_STRATEGY = STRATEGIES.default.name.value
STRATEGY_DESCRIPTION = STRATEGIES.description
