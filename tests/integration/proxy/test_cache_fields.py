"""The caller's own prompt-cache fields reach the upstream as sent (SPEC §15, issue 22.6):
OpenAI `prompt_cache_key`, `prompt_cache_retention`, `prompt_cache_options` and per-block
`prompt_cache_breakpoint`; Anthropic top-level `cache_control` and `diagnostics` — in
every mode that rewrites the history: transparent with a compaction, session-bound, and
vendor-native context management. The upstream is the billing fake, which records what
it received."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.settings import Settings
from tests.billing import BillingUpstream
from tests.integration.live_server import live_service

GPT = "gpt-4o-2024-08-06"
CLAUDE = "claude-sonnet-4-5-20250929"
# Both get an 8k window (threshold 6,963): a dozen turns compact.
WINDOW = 8_192
BREAKPOINT = {"mode": "explicit"}
OPENAI_FIELDS = [
    {"prompt_cache_key": "caller-key-1", "prompt_cache_retention": "24h"},
    {
        "prompt_cache_key": "caller-key-2",
        "prompt_cache_options": {"mode": "explicit", "ttl": "30m"},
    },
]
ANTHROPIC_FIELDS = {
    "cache_control": {"type": "ephemeral", "ttl": "1h"},
    "diagnostics": {"previous_message_id": "msg_013Zva2CMHLNnXjNJJKqJ2EF"},
}


@pytest.fixture
def upstream() -> Iterator[BillingUpstream]:
    with BillingUpstream() as fake:
        yield fake


@pytest.fixture
def proxy_url(tmp_path: Path, upstream: BillingUpstream) -> Iterator[str]:
    entry = {"context_window": WINDOW, "max_output_tokens": 4096, "encoding": "o200k_base"}
    models = tmp_path / "models.json"
    models.write_text(
        json.dumps(
            {
                "models": {
                    GPT: {**entry, "provider": "openai"},
                    CLAUDE: {**entry, "provider": "anthropic"},
                }
            }
        )
    )
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
        upstream_openai_url=upstream.openai_base_url,
        upstream_anthropic_url=upstream.base_url,
        models_file=models,
        state_key="cache-fields-test-key-" + "k" * 10,
    )
    with live_service(settings) as url:
        yield url


def words(turn: int, count: int = 300) -> str:
    return f"Turn {turn}: " + " ".join(f"w{turn}x{j}" for j in range(count))


def chat_history(turns: int = 12) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for turn in range(turns):
        history.append({"role": "user", "content": words(turn)})
        history.append({"role": "assistant", "content": f"Done with turn {turn}."})
    last = [{"type": "text", "text": "Go on.", "prompt_cache_breakpoint": BREAKPOINT}]
    history.append({"role": "user", "content": last})
    return history


def anthropic_history(turns: int = 12) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for turn in range(turns):
        history.append({"role": "user", "content": words(turn)})
        history.append({"role": "assistant", "content": f"Done with turn {turn}."})
    history.append({"role": "user", "content": "Go on."})
    return history


def responses_input(turns: int = 12) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for turn in range(turns):
        items.append({"role": "user", "content": words(turn)})
        items.append({"role": "assistant", "content": f"Done with turn {turn}."})
    last = {"type": "input_text", "text": "Go on.", "prompt_cache_breakpoint": BREAKPOINT}
    items.append({"type": "message", "role": "user", "content": [last]})
    return items


def post(
    url: str, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    vendor = (
        {"x-api-key": "sk-ant-caller", "anthropic-version": "2023-06-01"}
        if path == "/v1/messages"
        else {"authorization": "Bearer sk-caller"}
    )
    answer = httpx.post(url + path, json=body, headers={**vendor, **(headers or {})}, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer


def session(url: str, model: str, wire: str) -> dict[str, str]:
    # A kept tail that fits the 8k window (the session default is 20,000 tokens).
    fields = {"model": model, "format": wire, "keep_recent_tokens": 1_000}
    created = httpx.post(f"{url}/sessions", json=fields)
    assert created.status_code == 201, created.text
    return {"x-compactor-session": created.json()["id"]}


def assert_forwarded_as_sent(
    sent: dict[str, Any], received: dict[str, Any], fields: dict[str, Any], history_key: str
) -> None:
    for name, value in fields.items():
        assert received.get(name) == value, f"{name} was not forwarded as sent"
    # The history was rewritten (that is the point of the test), its last item kept whole.
    assert received[history_key] != sent[history_key]
    assert received[history_key][-1] == sent[history_key][-1]


def summarized(items: list[dict[str, Any]]) -> bool:
    return any(
        isinstance(item.get("content"), str) and item["content"].startswith(SUMMARY_MARKER_PREFIX)
        for item in items
    )


# -- OpenAI Chat Completions ----------------------------------------------------------


@pytest.mark.parametrize("fields", OPENAI_FIELDS)
def test_chat_fields_survive_a_transparent_compaction(
    proxy_url: str, upstream: BillingUpstream, fields: dict[str, Any]
) -> None:
    body = {"model": GPT, "messages": chat_history(), **fields}
    answer = post(proxy_url, "/v1/chat/completions", copy.deepcopy(body))
    assert answer.headers["x-compactor-compacted"] == "true"
    (received,) = upstream.bodies("chat")
    assert summarized(received["messages"])
    assert_forwarded_as_sent(body, received, fields, "messages")


@pytest.mark.parametrize("fields", OPENAI_FIELDS)
def test_chat_fields_survive_a_session_bound_request(
    proxy_url: str, upstream: BillingUpstream, fields: dict[str, Any]
) -> None:
    bound = session(proxy_url, GPT, "openai")
    body = {"model": GPT, "messages": chat_history(), **fields}
    post(proxy_url, "/v1/chat/completions", copy.deepcopy(body), bound)
    (received,) = upstream.bodies("chat")
    assert summarized(received["messages"])
    assert_forwarded_as_sent(body, received, fields, "messages")


# -- OpenAI Responses -----------------------------------------------------------------


@pytest.mark.parametrize("fields", OPENAI_FIELDS)
def test_responses_fields_survive_a_transparent_compaction(
    proxy_url: str, upstream: BillingUpstream, fields: dict[str, Any]
) -> None:
    body = {"model": GPT, "input": responses_input(), **fields}
    answer = post(proxy_url, "/v1/responses", copy.deepcopy(body))
    assert answer.headers["x-compactor-compacted"] == "true"
    (received,) = upstream.bodies("responses")
    assert summarized(received["input"])
    assert_forwarded_as_sent(body, received, fields, "input")


@pytest.mark.parametrize("fields", OPENAI_FIELDS)
def test_responses_fields_survive_a_session_bound_request(
    proxy_url: str, upstream: BillingUpstream, fields: dict[str, Any]
) -> None:
    bound = session(proxy_url, GPT, "responses")
    body = {"model": GPT, "input": responses_input(), **fields}
    post(proxy_url, "/v1/responses", copy.deepcopy(body), bound)
    (received,) = upstream.bodies("responses")
    assert summarized(received["input"])
    assert_forwarded_as_sent(body, received, fields, "input")


@pytest.mark.parametrize("fields", OPENAI_FIELDS)
def test_responses_fields_survive_native_compaction(
    proxy_url: str, upstream: BillingUpstream, fields: dict[str, Any]
) -> None:
    body = {
        "model": GPT,
        "input": responses_input(),
        "context_management": [{"type": "compaction", "compact_threshold": 2_000}],
        **fields,
    }
    answer = post(proxy_url, "/v1/responses", copy.deepcopy(body))
    assert any(item["type"] == "compaction" for item in answer.json()["output"])
    (received,) = upstream.bodies("responses")
    assert "context_management" not in received
    assert_forwarded_as_sent(body, received, fields, "input")


# -- Anthropic Messages ---------------------------------------------------------------


def anthropic_body(**extra: Any) -> dict[str, Any]:
    return {
        "model": CLAUDE,
        "max_tokens": 1024,
        "messages": anthropic_history(),
        **ANTHROPIC_FIELDS,
        **extra,
    }


def test_anthropic_fields_survive_a_transparent_compaction(
    proxy_url: str, upstream: BillingUpstream
) -> None:
    body = anthropic_body()
    answer = post(proxy_url, "/v1/messages", copy.deepcopy(body))
    assert answer.headers["x-compactor-compacted"] == "true"
    (received,) = upstream.bodies("messages")
    assert summarized(received["messages"])
    assert_forwarded_as_sent(body, received, ANTHROPIC_FIELDS, "messages")


def test_anthropic_fields_survive_a_session_bound_request(
    proxy_url: str, upstream: BillingUpstream
) -> None:
    bound = session(proxy_url, CLAUDE, "anthropic")
    body = anthropic_body()
    post(proxy_url, "/v1/messages", copy.deepcopy(body), bound)
    (received,) = upstream.bodies("messages")
    assert summarized(received["messages"])
    assert_forwarded_as_sent(body, received, ANTHROPIC_FIELDS, "messages")


@pytest.mark.parametrize(
    "edit",
    [
        {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 2_000}},
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 2_000},
            "keep": {"type": "tool_uses", "value": 1},
        },
    ],
    ids=["compact", "clear_tool_uses"],
)
def test_anthropic_fields_survive_native_context_management(
    proxy_url: str, upstream: BillingUpstream, edit: dict[str, Any]
) -> None:
    messages = anthropic_history()
    if edit["type"].startswith("clear"):
        # Tool uses to clear: each turn reads a file.
        messages = []
        for turn in range(6):
            call = {"type": "tool_use", "id": f"toolu_{turn}", "name": "read", "input": {}}
            result = {"type": "tool_result", "tool_use_id": f"toolu_{turn}", "content": words(turn)}
            messages += [
                {"role": "user", "content": f"Read part {turn}."},
                {"role": "assistant", "content": [call]},
                {"role": "user", "content": [result]},
            ]
            messages.append({"role": "assistant", "content": f"Read part {turn}."})
        messages.append({"role": "user", "content": "Go on."})
    body = anthropic_body(messages=messages, context_management={"edits": [edit]})
    post(proxy_url, "/v1/messages", copy.deepcopy(body), {"x-compactor-mode": "native"})
    (received,) = upstream.bodies("messages")
    assert "context_management" not in received
    assert_forwarded_as_sent(body, received, ANTHROPIC_FIELDS, "messages")
