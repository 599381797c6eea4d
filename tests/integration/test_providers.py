"""Real LLM summarizers against fake providers that are real HTTP servers on loopback:
what is sent, the truncation rule, transport retries, failures as problem+json, and a
client disconnect cancelling the model call."""

from __future__ import annotations

import asyncio
import json
import math
import socket
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from app.composition import SummarizerConfigError, running_summarizer
from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.engine.compaction.prompts import SUMMARIZER_SYSTEM_PROMPT
from app.engine.errors import SummarizerUnavailableError
from app.engine.ports import SummaryRequest
from app.engine.thinking import ThinkingLevel
from app.main import create_app
from app.providers import OpenAICompatibleSummarizer, Provider, RetryPolicy
from app.providers.http import retry_after_seconds
from app.registry import load_registry
from app.settings import Settings
from tests.conftest import CLAUDE_CODE, OPENHANDS, load_json
from tests.integration.fake_providers import (
    DEFAULT_SUMMARY,
    AnthropicFake,
    FakeProvider,
    OpenAIFake,
    Reply,
)

KEY = "sk-test-SECRET-key-5f1e0c9a"
PROBLEM = "application/problem+json"
SHARED_TRANSCRIPTS = Path("/work/shared/transcripts/claude_code")


def transcript(name: str) -> dict[str, Any]:
    """A real agent transcript from tests/data (or the shared copy)."""
    path = CLAUDE_CODE / name
    doc: dict[str, Any] = load_json(path if path.exists() else SHARED_TRANSCRIPTS / name)
    return doc


def compact_body(name: str = "tool_heavy.openai.json", **extra: Any) -> dict[str, Any]:
    return {**transcript(name), "force": True, "keep_recent_tokens": 1_500, **extra}


def budget(reserve_tokens: int, model_max_output: int) -> int:
    return min(math.floor(0.8 * reserve_tokens), model_max_output)


@pytest.fixture
def openai_fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as fake:
        yield fake


@pytest.fixture
def anthropic_fake() -> Iterator[AnthropicFake]:
    with AnthropicFake() as fake:
        yield fake


@contextmanager
def serving(
    fake: FakeProvider,
    tmp_path: Path,
    model: str,
    *,
    timeout: float = 20.0,
    retries: int = 1,
    models_file: Path | None = None,
) -> Iterator[TestClient]:
    """The service configured (from settings only) to summarize with `fake`."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
        summarizer="openai" if fake.wire == "openai" else "anthropic",
        summarizer_base_url=f"{fake.base_url}/v1" if fake.wire == "openai" else fake.base_url,
        summarizer_model=model,
        summarizer_api_key=KEY,
        summarizer_timeout_seconds=timeout,
        summarizer_max_retries=retries,
        models_file=models_file,
    )
    with TestClient(create_app(settings)) as client:
        yield client


def assert_problem(response: Any, status: int, model: str, *fragments: str) -> str:
    """A problem+json failure naming provider and model, without key or partial summary."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    problem = response.json()
    assert problem["status"] == status
    detail: str = problem["detail"]
    provider = "anthropic" if model.startswith("claude") else "openai"
    assert f"{provider} summarizer (model {model})" in detail, detail
    for fragment in fragments:
        assert fragment in detail, detail
    assert KEY not in response.text
    assert "PARTIAL-SUMMARY" not in response.text
    assert not {"summary", "messages"} & set(problem)
    return detail


def user_prompt(received_body: dict[str, Any], wire: str) -> str:
    messages = received_body["messages"]
    user = messages[-1] if wire == "openai" else messages[0]
    assert user["role"] == "user"
    content = user["content"]
    if isinstance(content, list):  # Anthropic: text blocks, most stable first
        return "\n\n".join(block["text"] for block in content)
    text: str = content
    return text


# --- What the OpenAI-compatible fake receives ------------------------------------------


@pytest.mark.parametrize("reserve_tokens", [None, 10_000, 4_000])
def test_openai_call_is_instruction_prompt_and_budget_without_tools(
    openai_fake: OpenAIFake, tmp_path: Path, reserve_tokens: int | None
) -> None:
    instructions = "Focus on the failing migration test"
    extra: dict[str, Any] = {"instructions": instructions}
    if reserve_tokens is not None:
        extra["reserve_tokens"] = reserve_tokens
    body = compact_body(**extra)
    assert body["messages"][1]["tool_calls"]  # a real tool-heavy history with tools
    with serving(openai_fake, tmp_path, "gpt-4o") as client:
        response = client.post("/compact", json=body)
    assert response.status_code == 200, response.text
    (call,) = openai_fake.received
    assert call.path == "/v1/chat/completions"
    assert call.headers["authorization"] == f"Bearer {KEY}"
    sent = call.body
    assert sent["model"] == "gpt-4o"
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert sent["messages"][0]["content"] == SUMMARIZER_SYSTEM_PROMPT
    assert not {"tools", "tool_choice", "functions", "reasoning_effort"} & set(sent)
    assert sent["max_tokens"] == budget(reserve_tokens or 32_768, 16_384)
    assert "max_completion_tokens" not in sent
    prompt = user_prompt(sent, "openai")
    assert "<conversation>" in prompt and "<previous-summary>" not in prompt
    assert instructions in prompt
    first_user_text = body["messages"][0]["content"]
    assert isinstance(first_user_text, str) and first_user_text[:60] in prompt

    out = response.json()
    assert out["compacted"] is True
    assert_summary_of_the_fake(out["summary"], out["restored_facts"])
    assert out["messages"][0]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert out["messages"][0]["content"].endswith(out["summary"])
    assert out["summarizer"] == {
        "provider": "openai",
        "model": "gpt-4o",
        "thinking": "off",
        "attempts": 1,
        "chunks": 1,
        "input_tokens": 1200,
        "output_tokens": 300,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }


@pytest.mark.parametrize(
    ("model", "requested", "effort"),
    [
        ("o3", "high", "high"),
        ("o4-mini", "medium", "medium"),
        ("o3", "off", "low"),  # o3 cannot think less than low: clamped to its lowest level
        ("gpt-5", "minimal", "minimal"),
    ],
)
def test_openai_reasoning_models_get_max_completion_tokens_and_effort(
    openai_fake: OpenAIFake, tmp_path: Path, model: str, requested: str, effort: str
) -> None:
    with serving(openai_fake, tmp_path, model) as client:
        response = client.post("/compact", json=compact_body(thinking=requested))
    assert response.status_code == 200, response.text
    sent = openai_fake.received[0].body
    assert sent["reasoning_effort"] == effort
    assert sent["max_completion_tokens"] == budget(32_768, 100_000 if model[0] == "o" else 128_000)
    assert "max_tokens" not in sent
    assert response.json()["summarizer"]["thinking"] == effort


def test_second_compaction_updates_the_previous_summary(
    openai_fake: OpenAIFake, tmp_path: Path
) -> None:
    openai_fake.script(Reply.ok(DEFAULT_SUMMARY), Reply.ok(DEFAULT_SUMMARY + "\n- updated"))
    with serving(openai_fake, tmp_path, "gpt-4o-mini") as client:
        first = client.post("/compact", json=compact_body())
        assert first.status_code == 200, first.text
        history = first.json()["messages"]
        history += [
            {"role": "user", "content": "Now also port the fix to the CLI. " * 60},
            {"role": "assistant", "content": "Ported it to app/cli.py and ran the tests. " * 60},
            {"role": "user", "content": "Thanks, please write the changelog entry next."},
        ]
        second = client.post(
            "/compact", json={"messages": history, "force": True, "keep_recent_tokens": 50}
        )
    assert second.status_code == 200, second.text
    assert second.json()["updated_previous_summary"] is True
    assert "- updated" in second.json()["summary"]
    prompt = user_prompt(openai_fake.received[1].body, "openai")
    previous = first.json()["summary"]
    assert f"<previous-summary>\n{previous}\n</previous-summary>" in prompt
    assert "port the fix to the CLI" in prompt
    assert SUMMARY_MARKER_PREFIX not in prompt.split("<conversation>", 1)[1]


def test_request_fields_cannot_choose_where_traffic_goes(
    openai_fake: OpenAIFake, tmp_path: Path
) -> None:
    elsewhere = "http://203.0.113.7/v1"
    body = compact_body(base_url=elsewhere, summarizer_base_url=elsewhere, summarizer="openai")
    with serving(openai_fake, tmp_path, "gpt-4o") as client:
        response = client.post("/compact", json=body)
        # Unknown fields are refused (SPEC §7): nothing is sent anywhere.
        assert response.status_code == 422, response.text
        assert "unknown field 'base_url'" in response.json()["detail"]
        assert not openai_fake.received
        for field in ("base_url", "summarizer_base_url", "summarizer"):
            body.pop(field)
        response = client.post("/compact", json=body)
    assert response.status_code == 200, response.text
    assert len(openai_fake.received) == 1


# --- What the Anthropic fake receives ---------------------------------------------------


@pytest.mark.parametrize(
    ("thinking", "reserve_tokens", "thinking_budget"),
    [
        ("off", None, None),
        ("low", None, 2048),
        ("high", None, 16384),
        ("medium", 10_000, 8000 - 1024),  # capped below max_tokens, room left for text
        ("high", 2_000, None),  # max_tokens 1600: too small to think at all
    ],
)
def test_anthropic_call_carries_system_budget_and_thinking(
    anthropic_fake: AnthropicFake,
    tmp_path: Path,
    thinking: str,
    reserve_tokens: int | None,
    thinking_budget: int | None,
) -> None:
    extra: dict[str, Any] = {"thinking": thinking, "instructions": "Keep the error text"}
    if reserve_tokens is not None:
        extra["reserve_tokens"] = reserve_tokens
    body = compact_body("tool_heavy.anthropic.json", **extra)
    with serving(anthropic_fake, tmp_path, "claude-sonnet-4-5") as client:
        response = client.post("/compact", json=body)
    assert response.status_code == 200, response.text
    (call,) = anthropic_fake.received
    assert call.path == "/v1/messages"
    assert call.headers["x-api-key"] == KEY
    assert call.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in call.headers
    sent = call.body
    assert sent["model"] == "claude-sonnet-4-5"
    # The fixed instructions end at a cache breakpoint (SPEC §15).
    assert sent["system"] == [
        {
            "type": "text",
            "text": SUMMARIZER_SYSTEM_PROMPT,
            "cache_control": {"type": "ephemeral", "ttl": "1h"},
        }
    ]
    assert len(sent["messages"]) == 1
    assert "tools" not in sent and "tool_choice" not in sent
    assert sent["max_tokens"] == budget(reserve_tokens or 32_768, 64_000)
    if thinking_budget is None:
        assert "thinking" not in sent
    else:
        assert sent["thinking"] == {"type": "enabled", "budget_tokens": thinking_budget}
        assert sent["thinking"]["budget_tokens"] < sent["max_tokens"]
    prompt = user_prompt(sent, "anthropic")
    assert "<conversation>" in prompt and "Keep the error text" in prompt

    out = response.json()
    assert_summary_of_the_fake(out["summary"], out["restored_facts"])
    assert "NOT-PART-OF-THE-SUMMARY" not in response.text
    assert out["summarizer"]["input_tokens"] == 1200
    # The level reported is the one really sent: none when the budget had no room for it.
    assert out["summarizer"]["thinking"] == (thinking if thinking_budget else "off")
    assert out["summarizer"]["output_tokens"] == 300


# --- The truncation rule ----------------------------------------------------------------


def test_truncated_then_ok_retries_once_at_the_lowest_level(
    anthropic_fake: AnthropicFake, tmp_path: Path
) -> None:
    anthropic_fake.script(Reply.truncated(), Reply.ok())
    body = compact_body("tool_heavy.anthropic.json", thinking="high")
    with serving(anthropic_fake, tmp_path, "claude-sonnet-4-5") as client:
        response = client.post("/compact", json=body)
    assert response.status_code == 200, response.text
    first, second = (r.body for r in anthropic_fake.received)
    assert first["thinking"]["budget_tokens"] == 16384
    assert "thinking" not in second  # lowest level of this model: off
    assert second["max_tokens"] == first["max_tokens"]
    assert second["messages"] == first["messages"] and second["system"] == first["system"]
    summarizer = response.json()["summarizer"]
    assert (summarizer["attempts"], summarizer["thinking"]) == (2, "off")
    assert summarizer["input_tokens"] == 2 * 1200  # both attempts were paid for
    assert "PARTIAL-SUMMARY" not in response.text


def test_truncated_twice_fails_with_502_and_no_partial_summary(
    openai_fake: OpenAIFake, tmp_path: Path
) -> None:
    openai_fake.script(Reply.truncated(), Reply.truncated())
    with serving(openai_fake, tmp_path, "gpt-5") as client:
        response = client.post("/compact", json=compact_body(thinking="high"))
    assert_problem(response, 502, "gpt-5", "again", "minimal")
    efforts = [r.body["reasoning_effort"] for r in openai_fake.received]
    assert efforts == ["high", "minimal"]


def test_truncated_without_a_lower_level_fails_at_once(
    openai_fake: OpenAIFake, tmp_path: Path
) -> None:
    openai_fake.script(Reply.truncated())
    with serving(openai_fake, tmp_path, "gpt-4o") as client:
        response = client.post("/compact", json=compact_body())
    assert_problem(response, 502, "gpt-4o", "output limit", "no lower level")
    assert len(openai_fake.received) == 1


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_empty_summary_fails_with_502(
    openai_fake: OpenAIFake, anthropic_fake: AnthropicFake, tmp_path: Path, wire: str
) -> None:
    fake: FakeProvider = openai_fake if wire == "openai" else anthropic_fake
    model = "gpt-4o" if wire == "openai" else "claude-sonnet-4-5"
    fake.script(Reply.empty())
    with serving(fake, tmp_path, model) as client:
        response = client.post("/compact", json=compact_body(f"tool_heavy.{wire}.json"))
    assert_problem(response, 502, model, "empty")
    assert len(fake.received) == 1  # an empty answer is not a truncation: no retry


# --- Transport retries and failures -------------------------------------------------------


def test_429_with_retry_after_is_retried(openai_fake: OpenAIFake, tmp_path: Path) -> None:
    openai_fake.script(
        Reply.status_only(
            429,
            {"error": {"message": "Rate limit reached", "type": "requests"}},
            {"Retry-After": "0"},
        ),
        Reply.ok(),
    )
    with serving(openai_fake, tmp_path, "gpt-4o") as client:
        response = client.post("/compact", json=compact_body())
        metrics = client.get("/metrics").text
    assert response.status_code == 200, response.text
    assert len(openai_fake.received) == 2
    assert openai_fake.received[0].body == openai_fake.received[1].body
    assert response.json()["summarizer"]["attempts"] == 1  # transport retries are not attempts
    assert 'compactor_summarizer_retries_total{provider="openai",reason="429"} 1.0' in metrics


def test_429_asking_to_wait_past_the_deadline_fails_at_once_with_503(
    anthropic_fake: AnthropicFake, tmp_path: Path
) -> None:
    anthropic_fake.script(
        Reply.status_only(
            429, {"type": "error", "error": {"type": "rate_limit_error"}}, {"Retry-After": "3600"}
        )
    )
    body = compact_body("tool_heavy.anthropic.json")
    with serving(anthropic_fake, tmp_path, "claude-sonnet-4-5", retries=3) as client:
        response = client.post("/compact", json=body)
    assert_problem(response, 503, "claude-sonnet-4-5", "HTTP 429", "3600 s")
    assert len(anthropic_fake.received) == 1


def test_500_then_ok_is_retried(anthropic_fake: AnthropicFake, tmp_path: Path) -> None:
    anthropic_fake.script(Reply.status_only(500, {"type": "error", "error": {"type": "api_error"}}))
    with serving(anthropic_fake, tmp_path, "claude-sonnet-4-5") as client:
        response = client.post("/compact", json=compact_body("tool_heavy.anthropic.json"))
    assert response.status_code == 200, response.text
    assert len(anthropic_fake.received) == 2


def test_always_500_gives_up_with_503(openai_fake: OpenAIFake, tmp_path: Path) -> None:
    error = {"error": {"message": "The server had an error", "type": "server_error"}}
    openai_fake.script(*[Reply.status_only(500, error)] * 3)
    with serving(openai_fake, tmp_path, "gpt-4o", retries=1) as client:
        response = client.post("/compact", json=compact_body())
    assert_problem(response, 503, "gpt-4o", "HTTP 500", "The server had an error", "2 attempts")
    assert len(openai_fake.received) == 2


def test_unreachable_provider_is_503(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
        summarizer="openai",
        summarizer_base_url=f"http://127.0.0.1:{port}/v1",
        summarizer_model="qwen3:8b",
        summarizer_max_retries=0,
    )
    with TestClient(create_app(settings)) as client:
        response = client.post("/compact", json=compact_body())
    assert_problem(response, 503, "qwen3:8b", f"127.0.0.1:{port}")


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_slow_provider_times_out_with_504_and_the_call_is_dropped(
    openai_fake: OpenAIFake, anthropic_fake: AnthropicFake, tmp_path: Path, wire: str
) -> None:
    fake: FakeProvider = openai_fake if wire == "openai" else anthropic_fake
    model = "gpt-4o" if wire == "openai" else "claude-sonnet-4-5"
    fake.script(Reply.slow())
    with serving(fake, tmp_path, model, timeout=0.5) as client:
        response = client.post("/compact", json=compact_body(f"tool_heavy.{wire}.json"))
    assert_problem(response, 504, model, "deadline")
    assert fake.client_hung_up.wait(10)


@pytest.mark.parametrize(
    ("wire", "reply", "fragment"),
    [
        ("openai", Reply.raw(b'{"choices": [{"message": '), "not JSON"),
        ("anthropic", Reply.raw(b"<html>502 Bad Gateway</html>"), "not JSON"),
        ("openai", Reply.raw(b'{"choices": []}'), "unexpected shape (choices"),
        ("openai", Reply.raw(b'{"id": "x", "object": "chat.completion"}'), "unexpected shape"),
        ("anthropic", Reply.raw(b'{"content": "just text", "stop_reason": "end_turn"}'), "content"),
        ("anthropic", Reply.raw(b'{"content": [{"type": "text"}]}'), "unexpected shape"),
        (
            "openai",
            Reply.raw(b'{"error": {"message": "Upstream overloaded", "code": 502}}'),
            "an error instead of a completion: Upstream overloaded",
        ),
    ],
)
def test_nonsense_answers_are_502(
    openai_fake: OpenAIFake,
    anthropic_fake: AnthropicFake,
    tmp_path: Path,
    wire: str,
    reply: Reply,
    fragment: str,
) -> None:
    fake: FakeProvider = openai_fake if wire == "openai" else anthropic_fake
    model = "gpt-4o" if wire == "openai" else "claude-sonnet-4-5"
    fake.script(reply)
    with serving(fake, tmp_path, model, retries=3) as client:
        response = client.post("/compact", json=compact_body(f"tool_heavy.{wire}.json"))
    assert_problem(response, 502, model, fragment)
    assert len(fake.received) == 1  # rejected answers are not retried


def test_rejected_key_is_502_and_never_echoed(openai_fake: OpenAIFake, tmp_path: Path) -> None:
    said = {"error": {"message": f"Incorrect API key provided: {KEY}.", "type": "invalid_request"}}
    openai_fake.script(Reply.status_only(401, said))
    with serving(openai_fake, tmp_path, "gpt-4o", retries=3) as client:
        response = client.post("/compact", json=compact_body())
    detail = assert_problem(response, 502, "gpt-4o", "HTTP 401", "COMPACTOR_SUMMARIZER_API_KEY")
    assert "Incorrect API key provided: [redacted]" in detail
    assert len(openai_fake.received) == 1


@pytest.mark.parametrize(
    "failure",
    [Reply.truncated(), Reply.empty(), Reply.status_only(400), Reply.raw(b"{")],
    ids=["truncated", "empty", "rejected", "malformed"],
)
def test_a_failed_session_compaction_stores_nothing(
    anthropic_fake: AnthropicFake, tmp_path: Path, failure: Reply
) -> None:
    doc = transcript("tool_heavy.anthropic.json")
    anthropic_fake.script(failure)
    with serving(anthropic_fake, tmp_path, "claude-sonnet-4-5") as client:
        created = client.post(
            "/sessions", json={"model": doc["model"], "keep_recent_tokens": 1_500}
        )
        sid = created.json()["id"]
        appended = client.post(f"/sessions/{sid}/messages", json={"messages": doc["messages"]})
        assert appended.status_code == 200, appended.text
        before = client.get(f"/sessions/{sid}/context").json()
        response = client.post(f"/sessions/{sid}/compact", json={"reason": "manual"})
        assert_problem(response, 502, "claude-sonnet-4-5")
        assert client.get(f"/sessions/{sid}/compactions").json()["compactions"] == []
        assert client.get(f"/sessions/{sid}/context").json() == before
        # The provider recovers: the next compaction works from the same, untouched base.
        retried = client.post(f"/sessions/{sid}/compact", json={"reason": "manual"})
        assert retried.status_code == 200, retried.text
        (record,) = client.get(f"/sessions/{sid}/compactions").json()["compactions"]
    assert_summary_of_the_fake(record["summary"], record["restored_facts"])
    assert "PARTIAL-SUMMARY" not in json.dumps(record)


def assert_summary_of_the_fake(summary: str, restored: list[dict[str, Any]]) -> None:
    """The fake model's summary, every line in order, plus only what the service adds to
    any summary: the pinned facts it left out (reported as restored) and, when the cut
    splits a turn, the quoted request."""
    remaining = iter(summary.splitlines())
    content = [line for line in DEFAULT_SUMMARY.splitlines() if line and line != "- (none)"]
    assert all(line in remaining for line in content)
    for fact in restored:
        assert fact["text"] in summary
    assert "NOT-PART-OF-THE-SUMMARY" not in summary  # thinking blocks are not part of it


# --- Chunks, disconnects, configuration -------------------------------------------------


def test_history_longer_than_the_summarizer_window_folds_in_chunks(
    openai_fake: OpenAIFake, tmp_path: Path
) -> None:
    models_file = tmp_path / "models.json"
    tiny = {"provider": "openai", "context_window": 6_000, "max_output_tokens": 1_000}
    models_file.write_text(json.dumps({"models": {"tiny-summarizer": tiny}}))
    body = {
        **load_json(OPENHANDS / "Project-MONAI__MONAI-5686_4.openai.json"),
        "force": True,
        "keep_recent_tokens": 1_000,
        "reserve_tokens": 2_000,
    }
    with serving(openai_fake, tmp_path, "tiny-summarizer", models_file=models_file) as client:
        response = client.post("/compact", json=body)
    assert response.status_code == 200, response.text
    summarizer = response.json()["summarizer"]
    calls = [r.body for r in openai_fake.received]
    assert len(calls) >= 2
    assert summarizer["chunks"] == len(calls) == summarizer["attempts"]
    assert summarizer["input_tokens"] == 1200 * len(calls)
    assert summarizer["output_tokens"] == 300 * len(calls)
    assert all(c["max_tokens"] == 1_000 for c in calls)
    prompts = [user_prompt(c, "openai") for c in calls]
    assert "<previous-summary>" not in prompts[0]
    assert all(f"<previous-summary>\n{DEFAULT_SUMMARY}\n" in p for p in prompts[1:])


def test_client_disconnect_cancels_the_model_call(openai_fake: OpenAIFake, tmp_path: Path) -> None:
    openai_fake.script(Reply.slow())
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
        summarizer="openai",
        summarizer_base_url=f"{openai_fake.base_url}/v1",
        summarizer_model="gpt-4o",
        summarizer_api_key=KEY,
        summarizer_timeout_seconds=60,
    )
    app = create_app(settings)
    payload = json.dumps(compact_body()).encode()
    sent: list[MutableMapping[str, Any]] = []

    async def scenario() -> None:
        hung_up = asyncio.Event()
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": payload, "more_body": False}
            await hung_up.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/compact",
            "raw_path": b"/compact",
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        async with app.router.lifespan_context(app) as lifespan_state:
            # What an ASGI server does with the lifespan's state: a copy in every scope.
            scope["state"] = dict(lifespan_state or {})
            call = asyncio.create_task(app(scope, receive, send))
            assert await asyncio.to_thread(openai_fake.request_arrived.wait, 10)
            hung_up.set()
            await asyncio.wait_for(call, 10)

    asyncio.run(scenario())
    assert openai_fake.client_hung_up.wait(10), "the model call was not cancelled"
    assert len(openai_fake.received) == 1
    starts = [m for m in sent if m["type"] == "http.response.start"]
    assert [m["status"] for m in starts] == [499]
    answer = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert b"Context summary" not in answer and b"## Goal" not in answer


@pytest.mark.parametrize("summarizer", ["openai", "anthropic"])
def test_http_summarizer_without_a_model_refuses_to_start(summarizer: str) -> None:
    settings = Settings(summarizer=summarizer, summarizer_model=None, summarizer_api_key=KEY)
    with pytest.raises(SummarizerConfigError, match="COMPACTOR_SUMMARIZER_MODEL"):
        create_app(settings)


def test_hosted_api_without_a_key_refuses_to_start() -> None:
    settings = Settings(summarizer="anthropic", summarizer_model="claude-sonnet-4-5")
    with pytest.raises(SummarizerConfigError, match="COMPACTOR_SUMMARIZER_API_KEY"):
        create_app(settings)


def test_outside_the_lifespan_the_service_is_unavailable(
    openai_fake: OpenAIFake, tmp_path: Path
) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
        summarizer="openai",
        summarizer_base_url=openai_fake.base_url,
        summarizer_model="gpt-4o",
    )
    client = TestClient(create_app(settings))  # no `with`: the lifespan never runs
    response = client.post("/compact", json=compact_body())
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    assert "lifespan" in response.json()["detail"]
    assert openai_fake.received == []


# --- Transport details, without the app ---------------------------------------------------


def _request() -> SummaryRequest:
    return SummaryRequest(
        system_prompt="only the summary",
        prompt_parts=("<conversation>\n[user]: hi\n</conversation>",),
        messages=(),
        previous_summary=None,
        instructions=None,
        max_output_tokens=500,
        thinking=ThinkingLevel.OFF,
    )


def _summarize_with_recorded_pauses(
    fake: OpenAIFake, max_retries: int, timeout: float = 30.0
) -> tuple[Any, list[float]]:
    pauses: list[float] = []

    async def record(seconds: float) -> None:
        pauses.append(seconds)

    async def run() -> Any:
        async with httpx.AsyncClient() as client:
            summarizer = OpenAICompatibleSummarizer(
                client,
                model="gpt-4o",
                entry=load_registry().resolve("gpt-4o"),
                provider=Provider("openai", fake.base_url, api_key=KEY),
                timeout_seconds=timeout,
                retry=RetryPolicy(max_retries=max_retries, sleep=record),
            )
            try:
                return await summarizer.summarize(_request())
            except SummarizerUnavailableError as exc:
                return exc

    return asyncio.run(run()), pauses


@pytest.mark.parametrize(
    ("summarizer", "model", "window", "max_output", "levels"),
    [
        ("openai", "gpt-4o-mini-2024-07-18", 128_000, 16_384, ()),
        (
            "anthropic",
            "claude-sonnet-4-5-20250929",
            200_000,
            64_000,
            ("off", "low", "medium", "high"),
        ),
        # Unregistered: the fallback window (so long histories are folded), no output cap.
        ("openai", "some-local-model", 128_000, None, ()),
    ],
)
def test_one_shot_summarizer_takes_its_limits_from_the_registry(
    openai_fake: OpenAIFake,
    anthropic_fake: AnthropicFake,
    summarizer: str,
    model: str,
    window: int | None,
    max_output: int | None,
    levels: tuple[str, ...],
) -> None:
    fake: FakeProvider = openai_fake if summarizer == "openai" else anthropic_fake
    settings = Settings(
        summarizer=summarizer, summarizer_base_url=fake.base_url, summarizer_model=model
    )

    async def run() -> tuple[Any, Any]:
        async with running_summarizer(settings) as one_shot:
            return one_shot.info, await one_shot.summarize(_request())

    info, result = asyncio.run(run())
    assert (info.provider, info.model) == (summarizer, model)
    assert (info.context_window, info.max_output_tokens) == (window, max_output)
    assert tuple(level.value for level in info.thinking_levels) == levels
    assert result.text == DEFAULT_SUMMARY
    assert fake.received[0].body["model"] == model


def test_retry_after_seconds_is_waited_exactly(openai_fake: OpenAIFake) -> None:
    openai_fake.script(Reply.status_only(429, headers={"Retry-After": "7"}), Reply.ok())
    result, pauses = _summarize_with_recorded_pauses(openai_fake, max_retries=2)
    assert pauses == [7.0]
    assert result.text == DEFAULT_SUMMARY


def test_backoff_doubles_without_a_hint_and_stays_bounded(openai_fake: OpenAIFake) -> None:
    openai_fake.script(*[Reply.status_only(503)] * 5)
    result, pauses = _summarize_with_recorded_pauses(openai_fake, max_retries=3)
    assert pauses == [0.5, 1.0, 2.0]
    assert isinstance(result, SummarizerUnavailableError)
    assert "4 attempts" in str(result)
    assert len(openai_fake.received) == 4


def test_no_pause_may_pass_the_deadline(openai_fake: OpenAIFake) -> None:
    openai_fake.script(Reply.status_only(429, headers={"Retry-After": "5"}), Reply.ok())
    result, pauses = _summarize_with_recorded_pauses(openai_fake, max_retries=3, timeout=2.0)
    assert pauses == []
    assert isinstance(result, SummarizerUnavailableError)
    assert len(openai_fake.received) == 1


def test_retry_after_forms() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    in_30s = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds({"retry-after": "12"}, now) == 12.0
    assert retry_after_seconds({"retry-after": "1.5"}, now) == 1.5
    assert retry_after_seconds({"retry-after": in_30s}, now) == 30.0
    assert retry_after_seconds({"retry-after": "Wed, 01 Jan 2020 00:00:00 GMT"}, now) == 0.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}, now) == 0.25
    assert retry_after_seconds({"retry-after": "soon"}, now) is None
    assert retry_after_seconds({}, now) is None


def test_network_guard_refuses_non_loopback(network_guard: list[str]) -> None:
    with pytest.raises(OSError):
        socket.create_connection(("203.0.113.9", 443), timeout=1)
    with pytest.raises(OSError):
        socket.getaddrinfo("api.openai.com", 443)
    assert len(network_guard) == 2
    network_guard.clear()  # the attempts were this test's point; do not fail it
