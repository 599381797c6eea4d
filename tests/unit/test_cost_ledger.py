"""Pricing of the cost ledger (SPEC §15): registry list prices by the longest name prefix,
the operator's prices over them, kinds without a price never guessed, and "uncompacted"
as the folded tokens read from the cache on every later call."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from app.engine.model_policy import ModelPolicy, ModelPrices
from app.registry import load_registry
from app.services.cost_ledger import SUMMARIZER, UPSTREAM, CostLedger, kind_dollars
from app.store.views import BilledTokens, CompactionRecord, LedgerLine

T0 = datetime(2026, 12, 2, tzinfo=UTC)


def test_registry_prices_follow_the_longest_prefix_of_the_requested_name() -> None:
    registry = load_registry()
    # Opus 4.6 resolves to the `claude-opus-4` entry for counting, but is priced apart.
    assert registry.resolve("claude-opus-4-6").prices.input == 5.0
    assert registry.resolve("claude-opus-4-20250514").prices.input == 15.0
    sonnet = registry.resolve("claude-sonnet-4-5-20250929").prices
    assert (sonnet.input, sonnet.cache_write, sonnet.cache_read, sonnet.output) == (
        3.0,
        3.75,
        0.3,
        15.0,
    )
    assert registry.resolve("gpt-4o-mini-2024-07-18").prices.cache_read == 0.075
    assert registry.resolve("anthropic/claude-sonnet-4.5").prices.input == 3.0
    assert registry.resolve("my-local-model").prices == ModelPrices()


def test_the_operators_prices_override_the_registry_key_by_key() -> None:
    policy = ModelPolicy(prices=ModelPrices(input=2.0))
    registry = load_registry(policies={"claude-sonnet-4-5*": policy})
    prices = registry.resolve("claude-sonnet-4-5").prices
    assert prices.input == 2.0
    assert prices.output == 15.0


def test_one_hour_cache_writes_cost_twice_the_input_price() -> None:
    prices = load_registry().resolve("claude-sonnet-4-5").prices
    tokens = BilledTokens(cache_write_tokens=3_000_000, cache_write_1h_tokens=1_000_000)
    dollars = kind_dollars(tokens, prices)
    assert dollars is not None
    assert dollars["cache_write"] == pytest.approx(2 * 3.75 + 1 * 6.0)


def test_a_kind_with_tokens_and_no_price_leaves_the_cost_unknown() -> None:
    assert kind_dollars(BilledTokens(output_tokens=1), ModelPrices(input=1.0)) is None
    dollars = kind_dollars(BilledTokens(input_tokens=1_000_000), ModelPrices(input=1.0))
    assert dollars == {"input": 1.0, "cache_write": 0.0, "cache_read": 0.0, "output": 0.0}


def line(source: str, model: str, tokens: BilledTokens, minutes: int) -> LedgerLine:
    return LedgerLine(source, "messages", model, tokens, 1, T0 + timedelta(minutes=minutes))


def compaction(minutes: int, before: int, after: int) -> CompactionRecord:
    fields: dict[str, Any] = {"tokens_before": before, "tokens_after": after}
    record = cast(CompactionRecord, object.__new__(CompactionRecord))
    for name, value in {**fields, "created_at": T0 + timedelta(minutes=minutes)}.items():
        object.__setattr__(record, name, value)
    return record


def test_uncompacted_adds_the_folded_tokens_at_the_cache_read_price() -> None:
    ledger = CostLedger(cast(Any, None), load_registry())
    model = "claude-sonnet-4-5"
    turn = BilledTokens(input_tokens=10, cache_read_tokens=20_000, output_tokens=100)
    lines = [
        line(UPSTREAM, model, turn, 1),
        line(SUMMARIZER, model, BilledTokens(30_000, 0, 0, 1_000), 2),
        line(UPSTREAM, model, turn, 3),
        line(UPSTREAM, model, turn, 5),
        line(UPSTREAM, model, turn, 7),
    ]
    # Folded 40,000 at minute 2, another 10,000 at minute 6.
    cost = ledger.session_cost(
        lines, [compaction(2, 50_000, 10_000), compaction(6, 30_000, 20_000)]
    )
    assert cost.folded_tokens == 40_000 + 40_000 + 50_000
    per_turn = (10 * 3 + 20_000 * 0.3 + 100 * 15) / 1e6
    assert cost.upstream.total == pytest.approx(4 * per_turn)
    assert cost.summarizer.total == pytest.approx((30_000 * 3 + 1_000 * 15) / 1e6)
    assert cost.uncompacted_dollars == pytest.approx(4 * per_turn + 130_000 * 0.3 / 1e6)
    assert cost.saved == pytest.approx(130_000 * 0.3 / 1e6 - cost.summarizer.total)
    # Here the summaries cost more than the cache reads they spared: a negative saving.
    assert cost.saved is not None and cost.saved < 0


def test_an_unpriced_model_is_named_and_its_totals_are_null() -> None:
    ledger = CostLedger(cast(Any, None), load_registry())
    cost = ledger.session_cost([line(UPSTREAM, "my-local-model", BilledTokens(5), 1)], [])
    assert cost.unpriced_models == ["my-local-model"]
    assert cost.upstream.total is None
    assert cost.total is None and cost.saved is None
    assert replace(cost.upstream.tokens) == BilledTokens(5)
