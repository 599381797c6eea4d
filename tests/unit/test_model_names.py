"""Model names as gateways and deployments write them resolve to the registry entry they
stand for, and say where their window came from (SPEC §18)."""

from __future__ import annotations

import logging

import pytest

from app.engine.model_policy import ModelPolicy, ModelPrices
from app.engine.models import PublishedModel, WindowSource
from app.registry import load_registry
from app.services.model_catalog import MAX_LOGGED_UNKNOWN, ModelCatalog


@pytest.mark.parametrize(
    ("name", "entry", "window"),
    [
        ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5", 200_000),
        ("openrouter/anthropic/claude-sonnet-4.5", "claude-sonnet-4-5", 200_000),
        # Not claude-sonnet-4's 200k by prefix: the dotted version is the 1M-window model.
        ("anthropic/claude-sonnet-4.6", "claude-sonnet-4-6", 1_000_000),
        ("anthropic/claude-3.5-sonnet", "claude-3-5-sonnet", 200_000),
        ("anthropic/claude-3.7-sonnet:thinking", "claude-3-7-sonnet", 200_000),
        ("openai/gpt-4o", "gpt-4o", 128_000),
        ("openai/gpt-4.1-mini", "gpt-4.1-mini", 1_047_576),
        ("azure/gpt-4o-mini", "gpt-4o-mini", 128_000),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5", 200_000),
        ("bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet", 200_000),
        ("vertex_ai/claude-opus-4@20250514", "claude-opus-4", 200_000),
        ("google/gemini-2.5-pro", "gemini-2.5-pro", 1_048_576),
        ("deepseek/deepseek-chat:free", "deepseek-chat", 128_000),
        ("meta-llama/llama-3.1-70b-instruct", "llama-3", 131_072),
    ],
)
def test_gateway_names_resolve_through_aliases(name: str, entry: str, window: int) -> None:
    info = load_registry().resolve(name)
    assert (info.name, info.context_window) == (entry, window)
    assert info.known and info.window_source is WindowSource.ALIAS


def test_registry_names_say_registry_and_unknown_names_say_fallback() -> None:
    registry = load_registry()
    dated = registry.resolve("claude-sonnet-4-5-20250929")
    assert dated.name == "claude-sonnet-4-5" and dated.window_source is WindowSource.REGISTRY
    unknown = registry.resolve("acme/house-model")
    assert not unknown.known and unknown.window_source is WindowSource.FALLBACK
    assert unknown.context_window is None and unknown.name == "acme/house-model"


def test_operator_aliases_name_a_registry_model_exactly_or_by_glob() -> None:
    registry = load_registry(
        aliases={"my-claude": "claude-sonnet-4-6", "team-gpt-*": "openai/gpt-4.1"}
    )
    mine = registry.resolve("my-claude")
    assert (mine.name, mine.context_window, mine.window_source) == (
        "claude-sonnet-4-6",
        1_000_000,
        WindowSource.ALIAS,
    )
    assert registry.resolve("team-gpt-large").name == "gpt-4.1"


def test_policies_merge_by_specificity_and_match_the_resolved_entry() -> None:
    registry = load_registry(
        policies={
            "*": ModelPolicy(reserve_tokens=16_000, prices=ModelPrices(input=1.0, output=2.0)),
            "claude-*": ModelPolicy(keep_recent_tokens=30_000, strategy="auto"),
            "claude-sonnet-4-6*": ModelPolicy(
                trigger_ratio=0.9, prices=ModelPrices(input=3.0, cache_read=0.3)
            ),
        }
    )
    # The gateway name matches the patterns through the entry it resolved to.
    info = registry.resolve("anthropic/claude-sonnet-4.6")
    policy = info.policy
    assert policy.reserve_tokens == 16_000 and policy.keep_recent_tokens == 30_000
    assert policy.strategy == "auto" and policy.trigger_ratio == 0.9
    assert policy.prices == ModelPrices(input=3.0, cache_write=None, cache_read=0.3, output=2.0)
    assert info.window_source is WindowSource.ALIAS  # no window in the policy
    assert registry.resolve("gpt-4o").policy.keep_recent_tokens is None


def test_a_policy_window_makes_an_unknown_name_known() -> None:
    registry = load_registry(policies={"litellm-big": ModelPolicy(context_window=1_000_000)})
    info = registry.resolve("LiteLLM-Big")
    assert info.known and info.context_window == 1_000_000
    assert info.window_source is WindowSource.CONFIG


def test_an_unknown_model_is_logged_once_per_name(caplog: pytest.LogCaptureFixture) -> None:
    catalog = ModelCatalog(load_registry())
    with caplog.at_level(logging.WARNING, logger="compactor.models"):
        for _ in range(3):
            catalog.resolve("house-model-a")
        catalog.resolve("house-model-b")
        catalog.resolve("gpt-4o")
        catalog.resolve(None)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert "unknown model 'house-model-a'" in lines[0] and "128000" in lines[0]
    assert "house-model-b" in lines[1]


def test_the_unknown_model_log_is_bounded(caplog: pytest.LogCaptureFixture) -> None:
    catalog = ModelCatalog(load_registry())
    with caplog.at_level(logging.WARNING, logger="compactor.models"):
        for i in range(MAX_LOGGED_UNKNOWN + 50):
            catalog.resolve(f"random-{i}")
    assert len(caplog.records) == MAX_LOGGED_UNKNOWN + 1
    assert "further ones are not logged" in caplog.records[-1].getMessage()


def test_published_windows_apply_below_the_configured_policy() -> None:
    registry = load_registry(policies={"pinned-model": ModelPolicy(context_window=50_000)})
    catalog = ModelCatalog(registry)
    catalog.publish(
        [
            PublishedModel("anthropic/claude-sonnet-4.5", 1_000_000, 64_000),
            PublishedModel("my-alias", None, underlying="anthropic/claude-sonnet-4-6"),
            PublishedModel("pinned-model", 2_000_000),
        ]
    )
    routed = catalog.resolve("anthropic/claude-sonnet-4.5")
    assert (routed.context_window, routed.window_source) == (1_000_000, WindowSource.UPSTREAM)
    assert routed.image_rule is not None  # still counted as the Claude model it is
    alias = catalog.resolve("my-alias")
    assert alias.name == "claude-sonnet-4-6" and alias.window_source is WindowSource.ALIAS
    assert catalog.resolve("pinned-model").context_window == 50_000
    catalog.publish([])
    assert catalog.resolve("my-alias").window_source is WindowSource.FALLBACK
