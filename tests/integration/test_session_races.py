"""Concurrent appends to one session over real HTTP, on SQLite and on a real PostgreSQL:
the format and the system prefix are decided on a locked, fresh session row."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from app.settings import Settings
from tests.live_server import live_server

TRIES = 12
OPENAI_BATCH = [
    {"role": "user", "content": "list the files"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py"},
]
ANTHROPIC_BATCH = [
    {"role": "user", "content": [{"type": "text", "text": "list the files"}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]},
]


@pytest.fixture
def base_url(database_url: str) -> Iterator[str]:
    with live_server(Settings(database_url=database_url)) as url:
        yield url


def _at_once(*calls: Callable[[], httpx.Response]) -> list[httpx.Response]:
    """Runs the calls in threads released together by a barrier."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], httpx.Response]) -> httpx.Response:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def _append(client: httpx.Client, sid: str, messages: list[Any]) -> Callable[[], httpx.Response]:
    return lambda: client.post(f"/sessions/{sid}/messages", json={"messages": messages})


def test_concurrent_first_appends_in_two_formats_accept_exactly_one(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=60) as a, httpx.Client(base_url=base_url) as b:
        for _ in range(TRIES):
            sid = a.post("/sessions", json={}).json()["id"]
            answers = _at_once(_append(a, sid, OPENAI_BATCH), _append(b, sid, ANTHROPIC_BATCH))
            statuses = sorted(r.status_code for r in answers)
            assert statuses == [200, 422], [r.text for r in answers]
            refused = next(r for r in answers if r.status_code == 422)
            assert "these messages look like" in refused.json()["detail"]
            # The session stays readable, in the format of the batch that won.
            context = a.get(f"/sessions/{sid}/context")
            assert context.status_code == 200, context.text
            assert len(context.json()["messages"]) == 3
            session = a.get(f"/sessions/{sid}").json()
            assert session["message_count"] == 3


def test_concurrent_system_appends_both_stay_in_the_context(base_url: str) -> None:
    history: list[dict[str, Any]] = []
    for i in range(30):
        words = " ".join(f"term{i}x{j}" for j in range(150))
        history.append({"role": "user", "content": f"step {i}: look at module_{i}.py {words}"})
        history.append({"role": "assistant", "content": f"module_{i}.py reviewed: {words}"})
    with httpx.Client(base_url=base_url, timeout=60) as a, httpx.Client(base_url=base_url) as b:
        for _ in range(TRIES):
            sid = a.post("/sessions", json={"format": "openai", "keep_recent_tokens": 500}).json()[
                "id"
            ]
            first = [{"role": "system", "content": "You are terse."}]
            second = [{"role": "system", "content": "Never delete tests."}]
            answers = _at_once(_append(a, sid, first), _append(b, sid, second))
            assert [r.status_code for r in answers] == [200, 200]
            assert a.post(f"/sessions/{sid}/messages", json={"messages": history}).is_success
            compacted = a.post(f"/sessions/{sid}/compact", json={})
            assert compacted.status_code == 200, compacted.text
            messages = compacted.json()["context"]["messages"]
            systems = [m["content"] for m in messages if m["role"] == "system"]
            assert sorted(systems) == ["Never delete tests.", "You are terse."]
            assert [m["role"] for m in messages[:2]] == ["system", "system"]
