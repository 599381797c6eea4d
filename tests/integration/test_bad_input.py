"""No 5xx for bad input, problem+json always (issue 11 items 4, 8, 10, 11)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.main import create_app
from app.settings import Settings
from app.store.database import create_db_engine

PROBLEM = "application/problem+json"
HISTORY = [
    {"role": "user", "content": "fix the failing test in parser.py"},
    {"role": "assistant", "content": "Done: the off-by-one in parse_line is fixed."},
]


def _problem(response: Any, status: int, *fragments: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    assert response.headers.get("x-request-id")
    detail: str = response.json()["detail"]
    for fragment in fragments:
        assert fragment in detail, detail
    return detail


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


# --- item 8: 500s ------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/sessions", "/sessions/{sid}/transcript"])
def test_offsets_beyond_64_bits_are_422(client: TestClient, path: str) -> None:
    sid = client.post("/sessions", json={}).json()["id"]
    for offset in (2**63, 2**64 + 5, 10**30):
        response = client.get(path.format(sid=sid), params={"offset": offset})
        _problem(response, 422, "offset")


def test_an_unexpected_failure_is_problem_json_with_the_request_id(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(settings)

    def crash() -> None:
        raise RuntimeError("a bug nobody mapped")

    app.add_api_route("/crash", crash)
    with TestClient(app) as client, caplog.at_level(logging.ERROR, "compactor.error"):
        response = client.get("/crash", headers={"x-request-id": "req-42"})
    detail = _problem(response, 500, "req-42")
    assert response.headers["x-request-id"] == "req-42"
    assert "a bug nobody mapped" not in detail
    logged = [r for r in caplog.records if r.name == "compactor.error"]
    assert logged and logged[0].exc_info is not None
    assert getattr(logged[0], "request_id", None) == "req-42"


def test_database_errors_never_quote_sql_parameters(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'params.db'}")
    try:
        with engine.connect() as connection, pytest.raises(Exception) as raised:
            connection.execute(text("INSERT INTO nowhere VALUES (:x)"), {"x": "SYSTEM-PROMPT"})
    finally:
        engine.dispose()
    assert "SYSTEM-PROMPT" not in str(raised.value)
    assert "hidden" in str(raised.value)


def test_an_unmigrated_database_is_503_and_said_at_start(
    database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    if database_url.startswith("sqlite"):
        url = f"sqlite:///{tmp_path / 'empty.db'}"
    else:
        import psycopg

        url = database_url.rsplit("/", 1)[0] + "/unmigrated"
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute('DROP DATABASE IF EXISTS "unmigrated"')
            admin.execute('CREATE DATABASE "unmigrated"')
    settings = Settings(database_url=url, auto_migrate=False)
    with caplog.at_level(logging.ERROR), TestClient(create_app(settings)) as client:
        said = [r.getMessage() for r in caplog.records if r.name == "compactor.startup"]
        assert any("run `compactor migrate`" in message for message in said), said
        for response in (
            client.get("/sessions"),
            client.post("/sessions", json={}),
            client.get("/sessions/x/context"),
        ):
            _problem(response, 503, "database schema is not at head: run `compactor migrate`")
        assert client.get("/healthz").status_code == 200
        assert client.post("/estimate", json={"messages": HISTORY}).status_code == 200


def test_nul_in_a_session_id_or_model_is_422(database_url: str) -> None:
    with TestClient(create_app(Settings(database_url=database_url))) as client:
        _problem(client.post("/sessions", json={"model": "gpt\u0000-4o"}), 422, "model")
        _problem(client.get("/sessions/abc%00def"), 422, "session_id")
        _problem(client.post("/sessions/abc%00def/messages", json={"messages": []}), 422)
        _problem(client.post("/estimate", json={"messages": HISTORY, "model": "a\u0000"}), 422)
        assert client.get("/sessions").status_code == 200


# --- item 4: nesting --------------------------------------------------------------------


@pytest.mark.parametrize("field", ["metadata", "tools"])
def test_deeply_nested_session_settings_are_refused_before_writing(
    database_url: str, field: str
) -> None:
    deep = _nested(300)
    value = deep if field == "metadata" else [{"type": "function", "function": deep}]
    with TestClient(create_app(Settings(database_url=database_url))) as client:
        _problem(client.post("/sessions", json={field: value}), 422, "nested more than 128")
        listed = client.get("/sessions")
        assert listed.status_code == 200 and listed.json()["total"] == 0
        shallow = _nested(100)
        value = shallow if field == "metadata" else [{"type": "function", "function": shallow}]
        created = client.post("/sessions", json={field: value})
        assert created.status_code == 201, created.text
        assert client.get("/sessions").status_code == 200
        assert client.get(f"/sessions/{created.json()['id']}").status_code == 200


def test_deeply_nested_messages_are_refused_before_writing(client: TestClient) -> None:
    sid = client.post("/sessions", json={}).json()["id"]
    message = {"role": "user", "content": "x", "meta": _nested(200)}
    _problem(client.post(f"/sessions/{sid}/messages", json={"messages": [message]}), 422)
    assert client.get(f"/sessions/{sid}/transcript").json()["total"] == 0


# --- item 10: unknown fields --------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "meant"),
    [
        ({"keep_recent": 500}, "'keep_recent_tokens'"),
        ({"trigger_token": 500}, "'trigger_tokens'"),
        ({"pin": ["x"]}, "'pinned'"),
        ({"exclude_tools": ["Read"]}, "'clear.exclude_tools'"),
        ({"clear": {"exclude_tool": ["Read"]}}, "'exclude_tools'"),
    ],
)
def test_unknown_compact_fields_are_422_with_did_you_mean(
    client: TestClient, extra: dict[str, Any], meant: str
) -> None:
    response = client.post("/compact", json={"messages": HISTORY, **extra})
    _problem(response, 422, "unknown field", f"did you mean {meant}?")


def test_unknown_estimate_field_is_422(client: TestClient) -> None:
    response = client.post("/estimate", json={"messages": HISTORY, "reserve_token": 1})
    _problem(response, 422, "unknown field 'reserve_token'; did you mean 'reserve_tokens'?")


def test_one_body_serves_estimate_and_compact(client: TestClient) -> None:
    body = {
        "messages": HISTORY,
        "keep_recent_tokens": 10,
        "force": True,
        "instructions": "keep paths",
        "strategy": "summarize",
        "thinking": "low",
    }
    assert client.post("/estimate", json=body).status_code == 200
    assert client.post("/compact", json=body).status_code in (200, 409)
    typo = client.post("/estimate", json={"messages": HISTORY, "keep_recent": 1})
    _problem(typo, 422, "did you mean 'keep_recent_tokens'?")


@pytest.mark.parametrize("endpoint", ["/estimate", "/compact"])
def test_provider_request_fields_are_accepted_and_ignored(
    client: TestClient, endpoint: str
) -> None:
    forwarded = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 40,
        "stream": True,
        "stop_sequences": ["\n\nHuman:"],
        "tool_choice": {"type": "auto"},
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "metadata": {"user_id": "u-1"},
        "service_tier": "auto",
        # Prompt caching (SPEC §15): automatic caching and cache diagnostics.
        "cache_control": {"type": "ephemeral"},
        "diagnostics": {"previous_message_id": None},
    }
    response = client.post(endpoint, json={"messages": HISTORY, **forwarded})
    assert response.status_code == 200, response.text
    openai = {
        "model": "gpt-4o",
        "max_completion_tokens": 100,
        "stream_options": {"include_usage": True},
        "parallel_tool_calls": False,
        "response_format": {"type": "text"},
        "seed": 7,
        "n": 1,
        "user": "u-1",
        "reasoning_effort": "low",
        "stop": ["END"],
        "store": False,
        "prompt_cache_key": "session-1",
        "prompt_cache_retention": "24h",
        "prompt_cache_options": {"mode": "explicit", "ttl": "30m"},
    }
    assert client.post(endpoint, json={"messages": HISTORY, **openai}).status_code == 200


def test_thinking_level_on_compact_is_still_ours(client: TestClient) -> None:
    response = client.post("/compact", json={"messages": HISTORY, "thinking": "loud"})
    _problem(response, 422, "thinking")


@pytest.mark.parametrize(
    ("path", "body", "meant"),
    [
        ("/sessions", {"keep_recent": 500}, "'keep_recent_tokens'"),
        ("/sessions", {"metdata": {}}, "'metadata'"),
        ("/sessions/{sid}/messages", {"mesages": []}, "'messages'"),
        ("/sessions/{sid}/compact", {"reasons": "manual"}, "'reason'"),
    ],
)
def test_session_bodies_are_as_strict(
    client: TestClient, path: str, body: dict[str, Any], meant: str
) -> None:
    sid = client.post("/sessions", json={}).json()["id"]
    response = client.post(path.format(sid=sid), json=body)
    _problem(response, 422, f"did you mean {meant}?")


# --- item 11: provider usage objects ------------------------------------------------------

OPENAI_CHAT_USAGE = {
    "prompt_tokens": 1000,
    "completion_tokens": 200,
    "total_tokens": 1200,
    "prompt_tokens_details": {"cached_tokens": 800, "audio_tokens": 0},
    "completion_tokens_details": {
        "reasoning_tokens": 64,
        "audio_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    },
}
RESPONSES_USAGE = {
    "input_tokens": 1000,
    "input_tokens_details": {"cached_tokens": 800},
    "output_tokens": 200,
    "output_tokens_details": {"reasoning_tokens": 64},
    "total_tokens": 1200,
}
ANTHROPIC_USAGE = {
    "input_tokens": 150,
    "cache_creation_input_tokens": 50,
    "cache_read_input_tokens": 800,
    "cache_creation": {"ephemeral_5m_input_tokens": 50, "ephemeral_1h_input_tokens": 0},
    "output_tokens": 200,
    "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
    "service_tier": "standard",
}


@pytest.mark.parametrize(
    "usage",
    [OPENAI_CHAT_USAGE, RESPONSES_USAGE, ANTHROPIC_USAGE],
    ids=["chat-completions", "responses", "anthropic"],
)
def test_provider_usage_objects_are_accepted_as_pasted(
    client: TestClient, usage: dict[str, Any]
) -> None:
    body = {"messages": HISTORY, "usage": [{"message_index": 1, **usage}]}
    response = client.post("/estimate", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    # 1,200 tokens in all: cached tokens are part of the input, never counted twice.
    assert answer["tokens"] == 1200
    assert answer["usage_anchor_index"] == 1


def test_anthropic_nulls_count_as_zero(client: TestClient) -> None:
    usage = {**ANTHROPIC_USAGE, "cache_creation_input_tokens": None, "server_tool_use": None}
    body = {"messages": HISTORY, "usage": [{"message_index": 1, **usage}]}
    assert client.post("/estimate", json=body).json()["tokens"] == 1150


def test_pasted_usage_anchors_a_session_estimate(client: TestClient) -> None:
    sid = client.post("/sessions", json={}).json()["id"]
    body = {"messages": HISTORY, "usage": [{"message_index": 1, **OPENAI_CHAT_USAGE}]}
    assert client.post(f"/sessions/{sid}/messages", json=body).status_code == 200
    estimate = client.get(f"/sessions/{sid}/context").json()["estimate"]
    assert estimate["tokens"] == 1200


@pytest.mark.parametrize(
    ("usage", "fragment"),
    [
        ({"message_index": 2, "input_tokens": 5}, "past the end of the 2 messages"),
        ({"message_index": 1, "prompt_tokens": 5, "input_tokens": 5}, "mixes"),
        (
            {"message_index": 1, "prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 9}},
            "more than",
        ),
        ({"message_index": 1, "input_token": 5}, "did you mean 'input_tokens'?"),
    ],
)
def test_bad_usage_is_422(client: TestClient, usage: dict[str, Any], fragment: str) -> None:
    response = client.post("/estimate", json={"messages": HISTORY, "usage": [usage]})
    _problem(response, 422, fragment)
