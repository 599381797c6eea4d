"""OpenAI's published counting examples: our count equals the API's prompt_tokens."""

from __future__ import annotations

import pytest

from app.engine.counting.count_cache import TokenCountCache
from app.registry import load_registry
from app.services.estimation import EstimationService
from app.services.history import HistoryInput
from app.tokenizers.bpe import TokenizerRegistry
from tests.conftest import DATA, load_json

COOKBOOK = load_json(DATA / "openai_cookbook_examples.json")


@pytest.fixture
def estimation(tokenizers: TokenizerRegistry) -> EstimationService:
    return EstimationService(tokenizers, load_registry(), TokenCountCache(), image_tokens=1200)


@pytest.mark.parametrize("model", sorted(COOKBOOK["chat"]["api_prompt_tokens"]))
def test_chat_messages_match_openai_reported_prompt_tokens(
    estimation: EstimationService, model: str
) -> None:
    example = COOKBOOK["chat"]
    counted = estimation.count(HistoryInput(messages=example["messages"], model=model))
    assert counted.estimate.tokens == example["api_prompt_tokens"][model]
    assert counted.choice.exact


@pytest.mark.parametrize("model", sorted(COOKBOOK["tools"]["api_prompt_tokens"]))
def test_function_tools_match_openai_reported_prompt_tokens(
    estimation: EstimationService, model: str
) -> None:
    example = COOKBOOK["tools"]
    counted = estimation.count(
        HistoryInput(messages=example["messages"], tools=example["tools"], model=model)
    )
    assert counted.estimate.tokens == example["api_prompt_tokens"][model]


def test_breakdown_separates_system_tools_and_messages(estimation: EstimationService) -> None:
    example = COOKBOOK["tools"]
    counted = estimation.count(
        HistoryInput(messages=example["messages"], tools=example["tools"], model="gpt-4o")
    )
    estimate = counted.estimate
    assert estimate.system > 0 and estimate.tools > 0 and estimate.messages > 0
    assert estimate.system + estimate.tools + estimate.messages == estimate.tokens
    assert len(estimate.per_message) == len(example["messages"])


def test_system_prompt_and_tools_are_counted_not_forgotten(estimation: EstimationService) -> None:
    messages = [{"role": "user", "content": "hi"}]
    bare = estimation.count(HistoryInput(messages=messages, model="gpt-4o")).estimate.tokens
    with_system = estimation.count(
        HistoryInput(messages=messages, system="You are terse.", model="gpt-4o")
    ).estimate.tokens
    with_tools = estimation.count(
        HistoryInput(messages=messages, tools=COOKBOOK["tools"]["tools"], model="gpt-4o")
    ).estimate.tokens
    assert with_system > bare
    assert with_tools > bare


def test_cl100k_and_o200k_differ_and_both_load_offline(tokenizers: TokenizerRegistry) -> None:
    text = "Tokenizers split 'unbelievable' text differently: 你好，世界"
    o200k = tokenizers.get("o200k_base").count(text)
    cl100k = tokenizers.get("cl100k_base").count(text)
    assert o200k > 0 and cl100k > 0
    assert o200k != cl100k
