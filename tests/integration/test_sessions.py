"""The session store over HTTP, on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.engine.errors import SummarizerUnavailableError
from app.engine.extractive.summarizer import ExtractiveSummarizer
from app.engine.ports import SummarizerInfo, SummaryRequest, SummaryResult
from app.formats.registry import FORMATS
from app.main import create_app
from app.settings import Settings
from tests.conftest import BIG_ANTHROPIC, BIG_OPENAI, load_json, tool_pairs_intact


def _app(url: str, summarizer: Any = None, **settings: Any) -> TestClient:
    return TestClient(create_app(Settings(database_url=url, **settings), summarizer=summarizer))


@pytest.fixture
def settings(database_url: str) -> Settings:
    """The `client` of this module serves each store backend."""
    return Settings(database_url=database_url)


@pytest.mark.parametrize("path", [BIG_ANTHROPIC, BIG_OPENAI], ids=["anthropic", "openai"])
def test_real_transcript_in_batches_with_prepare_compacts_and_loses_nothing(
    database_url: str, path: Any
) -> None:
    body = load_json(path)
    messages = body["messages"]
    settings = {"model": body.get("model"), "trigger_tokens": 30_000, "keep_recent_tokens": 8_000}
    with _app(database_url) as client:
        session = client.post("/sessions", json=settings).json()
        sid = session["id"]
        compactions = 0
        for start in range(0, len(messages), 40):
            batch = messages[start : start + 40]
            appended = client.post(f"/sessions/{sid}/messages", json={"messages": batch})
            assert appended.status_code == 200, appended.text
            assert appended.json()["first_seq"] == start
            prepared = client.post(f"/sessions/{sid}/prepare").json()
            compactions += prepared["compacted"]
            context = prepared["context"]
            assert context["estimate"]["tokens"] <= 30_000 or not prepared["compacted"]
        assert compactions >= 3
        transcript = client.get(f"/sessions/{sid}/transcript", params={"limit": 5000}).json()
        assert transcript["total"] == len(messages)
        assert transcript["messages"] == messages
        context = client.get(f"/sessions/{sid}/context").json()
        assert context["messages"][0]["content"].startswith(SUMMARY_MARKER_PREFIX)
        assert (
            sum(
                1
                for m in context["messages"]
                if isinstance(m.get("content"), str)
                and m["content"].startswith(SUMMARY_MARKER_PREFIX)
            )
            == 1
        )
        assert context["messages"][-1] == messages[-1]
        assert tool_pairs_intact(context["messages"])
        records = client.get(f"/sessions/{sid}/compactions").json()["compactions"]
        assert len(records) == compactions
        assert records[0]["previous_id"] is None
        for previous, record in itertools.pairwise(records):
            assert record["previous_id"] == previous["id"]
            assert record["first_kept_seq"] >= previous["first_kept_seq"]
            assert record["trigger"] == "auto"
    with _app(database_url) as restarted:
        assert restarted.get(f"/sessions/{sid}/context").json() == context


def test_recompaction_resummarizes_previously_kept_entries(client: TestClient) -> None:
    sid = client.post("/sessions", json={"keep_recent_tokens": 60}).json()["id"]
    # Long enough that each summary is smaller than what it folds (the inflation guard).
    background = "Some background about this module follows here. " * 25
    first = [
        {"role": "user", "content": f"Constraint {i}: never touch file_{i}.py. {background}"}
        for i in range(6)
    ]
    client.post(f"/sessions/{sid}/messages", json={"messages": first})
    one = client.post(f"/sessions/{sid}/compact", json={"reason": "manual"}).json()
    assert one["compacted"]
    kept_before = one["compaction"]["first_kept_seq"]
    more = [{"role": "assistant", "content": f"Working on step {i} " * 10} for i in range(6)]
    client.post(f"/sessions/{sid}/messages", json={"messages": more})
    two = client.post(f"/sessions/{sid}/compact", json={"instructions": "focus on files"}).json()
    assert two["compaction"]["first_kept_seq"] > kept_before
    assert two["compaction"]["previous_id"] == one["compaction"]["id"]
    assert two["compaction"]["instructions"] == "focus on files"
    # Entries kept verbatim by the first compaction are now inside the summary.
    for i in range(kept_before, 6):
        assert f"never touch file_{i}.py" in two["compaction"]["summary"]
    assert "never touch file_0.py" in two["compaction"]["summary"]


def test_idempotent_append_replays_the_same_answer(client: TestClient) -> None:
    sid = client.post("/sessions", json={}).json()["id"]
    batch = {"messages": [{"role": "user", "content": "hi"}]}
    headers = {"Idempotency-Key": "batch-1"}
    first = client.post(f"/sessions/{sid}/messages", json=batch, headers=headers)
    again = client.post(f"/sessions/{sid}/messages", json=batch, headers=headers)
    assert first.json() == again.json() == {"appended": 1, "first_seq": 0, "last_seq": 0}
    assert client.get(f"/sessions/{sid}/transcript").json()["total"] == 1
    changed = {"messages": [{"role": "user", "content": "different"}]}
    reused = client.post(f"/sessions/{sid}/messages", json=changed, headers=headers)
    assert reused.status_code == 422
    assert "Idempotency-Key" in reused.json()["detail"]


def test_concurrent_appends_are_neither_lost_nor_reordered(client: TestClient) -> None:
    sid = client.post("/sessions", json={}).json()["id"]
    results: list[dict[str, Any]] = []

    def writer(n: int) -> None:
        batch = [{"role": "user", "content": f"w{n}-{i}"} for i in range(5)]
        response = client.post(f"/sessions/{sid}/messages", json={"messages": batch})
        results.append(response.json())

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r["first_seq"] for r in results) == list(range(0, 40, 5))
    messages = client.get(f"/sessions/{sid}/transcript").json()["messages"]
    assert len(messages) == 40
    for result in results:
        chunk = messages[result["first_seq"] : result["last_seq"] + 1]
        writer_id = chunk[0]["content"].split("-")[0]
        assert [m["content"] for m in chunk] == [f"{writer_id}-{i}" for i in range(5)]


class SlowSummarizer:
    """The extractive summarizer, slowed so two compactions overlap."""

    def __init__(self, seconds: float) -> None:
        self._inner = ExtractiveSummarizer()
        self._seconds = seconds

    @property
    def info(self) -> SummarizerInfo:
        return self._inner.info

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        import asyncio

        await asyncio.sleep(self._seconds)
        return await self._inner.summarize(request)


class FailingSummarizer:
    info = SummarizerInfo(provider="fake", model="down")

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        raise SummarizerUnavailableError("connection refused", provider="fake", model="down")


def _session_with_history(client: TestClient, n: int = 10) -> str:
    sid = client.post("/sessions", json={"keep_recent_tokens": 50}).json()["id"]
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 200}
        for i in range(n)
    ]
    client.post(f"/sessions/{sid}/messages", json={"messages": messages})
    return sid


def test_two_compactions_at_once_never_build_on_the_same_base(database_url: str) -> None:
    with _app(database_url, summarizer=SlowSummarizer(0.5)) as client:
        sid = _session_with_history(client)
        statuses: list[int] = []

        def compact() -> None:
            statuses.append(client.post(f"/sessions/{sid}/compact", json={}).status_code)

        threads = [threading.Thread(target=compact) for _ in range(2)]
        for thread in threads:
            thread.start()
            time.sleep(0.05)
        for thread in threads:
            thread.join()
        assert sorted(statuses) == [200, 409]
        records = client.get(f"/sessions/{sid}/compactions").json()["compactions"]
        assert len(records) == 1


def test_a_failed_compaction_leaves_no_record_and_no_change(database_url: str) -> None:
    with _app(database_url, summarizer=FailingSummarizer()) as client:
        sid = _session_with_history(client)
        before = client.get(f"/sessions/{sid}/context").json()
        failed = client.post(f"/sessions/{sid}/compact", json={"reason": "overflow"})
        assert failed.status_code == 503
        assert "fake summarizer" in failed.json()["detail"]
        assert client.get(f"/sessions/{sid}/compactions").json() == {"compactions": []}
        assert client.get(f"/sessions/{sid}/context").json() == before


def test_nothing_to_compact_is_409(client: TestClient) -> None:
    sid = client.post("/sessions", json={}).json()["id"]
    client.post(f"/sessions/{sid}/messages", json={"messages": [{"role": "user", "content": "x"}]})
    response = client.post(f"/sessions/{sid}/compact", json={"reason": "overflow"})
    assert response.status_code == 409
    assert "nothing to compact" in response.json()["detail"]


def test_usage_before_the_latest_compaction_is_ignored_until_a_fresh_reply(
    client: TestClient,
) -> None:
    sid = client.post("/sessions", json={"keep_recent_tokens": 40}).json()["id"]
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " * 60}
        for i in range(8)
    ]
    usage = [{"message_index": 7, "input_tokens": 50_000, "output_tokens": 10}]
    client.post(f"/sessions/{sid}/messages", json={"messages": messages, "usage": usage})
    anchored = client.get(f"/sessions/{sid}/context").json()["estimate"]
    assert anchored["method"] == "usage+tokenizer" and anchored["tokens"] > 50_000
    client.post(f"/sessions/{sid}/compact", json={})
    stale = client.get(f"/sessions/{sid}/context").json()["estimate"]
    assert stale["method"] == "tokenizer" and stale["tokens"] < 2_000
    reply = {
        "messages": [{"role": "assistant", "content": "fresh"}],
        "usage": [{"message_index": 0, "input_tokens": 700, "output_tokens": 5}],
    }
    client.post(f"/sessions/{sid}/messages", json=reply)
    fresh = client.get(f"/sessions/{sid}/context").json()["estimate"]
    assert fresh["method"] == "usage+tokenizer" and fresh["tokens"] == 705


def test_delete_makes_the_session_404_everywhere(client: TestClient) -> None:
    sid = _session_with_history(client)
    client.post(f"/sessions/{sid}/compact", json={})
    assert client.delete(f"/sessions/{sid}").status_code == 204
    for method, path in [
        ("get", ""),
        ("get", "/transcript"),
        ("get", "/context"),
        ("get", "/compactions"),
        ("post", "/prepare"),
        ("delete", ""),
    ]:
        response = getattr(client, method)(f"/sessions/{sid}{path}")
        assert response.status_code == 404, (method, path)
        assert response.headers["content-type"].startswith("application/problem+json")
    assert all(s["id"] != sid for s in client.get("/sessions").json()["sessions"])


def test_list_is_paginated(client: TestClient) -> None:
    ids = {client.post("/sessions", json={"metadata": {"n": i}}).json()["id"] for i in range(5)}
    page1 = client.get("/sessions", params={"limit": 3}).json()
    page2 = client.get("/sessions", params={"limit": 3, "offset": 3}).json()
    assert page1["total"] == 5 and len(page1["sessions"]) == 3 and len(page2["sessions"]) == 2
    assert {s["id"] for s in page1["sessions"] + page2["sessions"]} == ids


def test_invalid_messages_are_refused_before_anything_is_stored(client: TestClient) -> None:
    sid = client.post("/sessions", json={"format": "anthropic"}).json()["id"]
    bad = {"messages": [{"role": "user", "content": "ok"}, {"role": "tool", "content": "x"}]}
    response = client.post(f"/sessions/{sid}/messages", json=bad)
    assert response.status_code == 422
    assert "messages[1].role" in response.json()["detail"]
    assert client.get(f"/sessions/{sid}/transcript").json()["total"] == 0


def test_database_down_is_503_and_not_ready(tmp_path: Any) -> None:
    from tests.postgres import _free_port

    url = f"postgresql://nobody@127.0.0.1:{_free_port()}/none"
    with _app(url) as client:
        response = client.post("/sessions", json={})
        assert response.status_code == 503
        assert "session store is unavailable" in response.json()["detail"]
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert client.get("/healthz").status_code == 200
        estimate = client.post("/estimate", json={"messages": [{"role": "user", "content": "x"}]})
        assert estimate.status_code == 200


def test_format_is_decided_by_the_first_message_that_proves_it(client: TestClient) -> None:
    body = load_json(BIG_ANTHROPIC)
    messages = body["messages"][:60]
    assert FORMATS.evidence(messages[:1]) is None  # the first message reads as either format
    sid = client.post("/sessions", json={"model": body["model"]}).json()["id"]
    for message in messages:
        client.post(f"/sessions/{sid}/messages", json={"messages": [message]})
    assert client.get(f"/sessions/{sid}").json()["format"] == "anthropic"
    context = client.get(f"/sessions/{sid}/context").json()
    direct = client.post("/estimate", json={"messages": messages, "model": body["model"]}).json()
    assert context["estimate"]["tokens"] == direct["tokens"]


def test_a_batch_valid_in_only_one_format_decides_it(client: TestClient) -> None:
    sid = client.post("/sessions", json={}).json()["id"]
    first = [{"role": "user", "content": "hi"}, {"role": "assistant"}]  # OpenAI only
    assert client.post(f"/sessions/{sid}/messages", json={"messages": first}).status_code == 200
    assert client.get(f"/sessions/{sid}").json()["format"] == "openai"
    image = {"type": "image", "source": {"type": "url", "url": "http://x/y.png"}}
    later = {"messages": [{"role": "user", "content": [image]}]}
    refused = client.post(f"/sessions/{sid}/messages", json=later)
    assert refused.status_code == 422
    assert "Anthropic content block" in refused.json()["detail"]
    assert client.get(f"/sessions/{sid}/context").status_code == 200
    assert client.post(f"/sessions/{sid}/prepare").status_code == 200


def test_huge_usage_reports_are_refused_and_big_ones_are_stored(client: TestClient) -> None:
    sid = client.post("/sessions", json={"trigger_tokens": 50, "keep_recent_tokens": 100}).json()[
        "id"
    ]
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "x " * 150}
        for i in range(12)
    ]
    absurd = [{"message_index": 11, "input_tokens": 10**20}]
    refused = client.post(f"/sessions/{sid}/messages", json={"messages": messages, "usage": absurd})
    assert refused.status_code == 422
    # Beyond 32 bits, within reason: stored and compacted on both backends.
    big = [{"message_index": 11, "input_tokens": 3_000_000_000}]
    client.post(f"/sessions/{sid}/messages", json={"messages": messages, "usage": big})
    compacted = client.post(f"/sessions/{sid}/compact", json={})
    assert compacted.status_code == 200, compacted.text
    assert compacted.json()["compaction"]["tokens_before"] >= 3_000_000_000
