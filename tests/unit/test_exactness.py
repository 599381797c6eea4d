"""`exact` is true only when every part has a published or API-confirmed rule; the
breakdown names what was estimated."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine.counting.count_cache import TokenCountCache
from app.registry import load_registry
from app.services.estimation import EstimationService
from app.services.history import HistoryInput
from app.tokenizers.bpe import TokenizerRegistry

USER = {"role": "user", "content": "What's the weather in Paris?"}
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    ],
}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "21C"}
FLAT_TOOL = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Current weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
NESTED_TOOL = {
    "type": "function",
    "function": {
        "name": "book",
        "parameters": {
            "type": "object",
            "properties": {"trip": {"type": "object", "properties": {"to": {"type": "string"}}}},
        },
    },
}


@pytest.fixture
def estimation(tokenizers: TokenizerRegistry) -> EstimationService:
    return EstimationService(tokenizers, load_registry(), TokenCountCache(), image_tokens=1200)


def _parts(estimation: EstimationService, **kwargs: Any) -> tuple[bool, tuple[str, ...]]:
    counted = estimation.count(HistoryInput(**kwargs))
    return counted.exact, counted.estimated_parts


def test_plain_chat_with_flat_tools_is_exact(estimation: EstimationService) -> None:
    assert _parts(estimation, messages=[USER], tools=[FLAT_TOOL], model="gpt-4o") == (True, ())


@pytest.mark.parametrize(
    ("kwargs", "part"),
    [
        ({"messages": [USER, CALL, RESULT], "model": "gpt-4o"}, "tool_calls"),
        ({"messages": [USER, CALL, RESULT], "model": "gpt-4o"}, "tool_results"),
        ({"messages": [USER], "tools": [NESTED_TOOL], "model": "gpt-4o"}, "tools"),
        ({"messages": [USER], "tools": [{"type": "web_search"}], "model": "gpt-4o"}, "tools"),
        (
            {
                "messages": [{"role": "user", "content": [{"type": "input_audio", "x": 1}]}],
                "model": "gpt-4o",
            },
            "blocks",
        ),
        ({"messages": [USER], "model": "claude-sonnet-4-5", "format": "anthropic"}, "tokenizer"),
        ({"messages": [USER], "model": "some-local-model"}, "tokenizer"),
        ({"messages": [USER], "model": "gpt-4o", "tokenizer": "chars/4"}, "tokenizer"),
        (
            {
                "messages": [{"type": "message", "role": "user", "content": "hi"}],
                "model": "gpt-4o",
                "format": "responses",
            },
            "framing",
        ),
    ],
)
def test_a_guessed_part_makes_it_inexact_and_is_named(
    estimation: EstimationService, kwargs: dict[str, Any], part: str
) -> None:
    exact, parts = _parts(estimation, **kwargs)
    assert not exact
    assert part in parts


def test_estimate_endpoint_lists_estimated_parts(client: TestClient) -> None:
    body = {"messages": [USER, CALL, RESULT], "model": "gpt-4o"}
    out = client.post("/estimate", json=body).json()
    assert out["exact"] is False
    assert out["breakdown"]["estimated"] == ["tool_calls", "tool_results"]
    plain = client.post("/estimate", json={"messages": [USER], "model": "gpt-4o"}).json()
    assert plain["exact"] is True and plain["breakdown"]["estimated"] == []


def test_estimate_endpoint_counts_legacy_functions(client: TestClient) -> None:
    functions = [FLAT_TOOL["function"]]
    body: dict[str, Any] = {"messages": [USER], "model": "gpt-4o"}
    bare = client.post("/estimate", json=body).json()
    legacy = client.post("/estimate", json={**body, "functions": functions}).json()
    modern = client.post("/estimate", json={**body, "tools": [FLAT_TOOL]}).json()
    assert legacy["breakdown"]["tools"] == modern["breakdown"]["tools"] > 0
    assert legacy["tokens"] > bare["tokens"]
    none = client.post("/estimate", json={**body, "tools": [FLAT_TOOL], "tool_choice": "none"})
    assert none.json()["breakdown"]["tools"] == modern["breakdown"]["tools"] + 1
