"""The names the HTTP contract accepts come from the registries that define them: every
strategy name has an implementation, and the OpenAPI enums are the registries' names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine.compaction.strategy import CompactionStep, StrategyName
from app.formats.registry import FORMATS
from app.services.estimation import TOKENIZER_CHOICES
from app.services.strategies.registry import STRATEGIES, StrategyRegistry
from app.services.strategies.summarize import Summarize

DOCUMENT = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


def _property(schema: str, name: str) -> dict[str, Any]:
    schemas = json.loads(DOCUMENT.read_text("utf-8"))["components"]["schemas"]
    found: dict[str, Any] = schemas[schema]["properties"][name]
    return found


def test_every_strategy_name_has_its_implementation() -> None:
    assert [s.name for s in STRATEGIES] == list(StrategyName)
    with pytest.raises(ValueError, match="clear_tool_results, auto"):
        StrategyRegistry([Summarize()], default=StrategyName.SUMMARIZE)


def test_the_openapi_enums_are_the_registries_names() -> None:
    strategy = _property("CompactIn", "strategy")
    # Unset (null) means the model's configured strategy, else the registry's default.
    (named,) = [kind for kind in strategy["anyOf"] if kind.get("type") == "string"]
    assert tuple(named["enum"]) == STRATEGIES.names
    assert strategy["description"].startswith(STRATEGIES.description)
    assert "Default: the model's configured strategy" in strategy["description"]
    assert tuple(_property("CompactIn", "tokenizer")["enum"]) == TOKENIZER_CHOICES
    assert tuple(_property("CompactOut", "format")["enum"]) == FORMATS.names
    applied = _property("CompactOut", "applied")["items"]["enum"]
    assert applied == [step.value for step in CompactionStep]


def test_formats_are_listed_in_registration_order_and_asked_responses_first() -> None:
    assert FORMATS.names == ("openai", "anthropic", "responses", "gemini")
    assert [wire.name for wire in FORMATS] == ["responses", "openai", "anthropic", "gemini"]
