"""A bound request on a session over its threshold (SPEC §10, issue 21.2 and 21.3): it
waits for a compaction of the session already running and forwards its result, never
a 409 to the SDK; and a failing summarizer forwards the context uncompacted (fail open),
the reply recorded and the failure in the compaction log and the metrics."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.settings import Settings
from app.store.database import create_db_engine
from app.store.models import SessionRow
from app.tokenizers.bpe import TokenizerRegistry
from tests.integration.fake_providers import OpenAIFake, Reply
from tests.integration.fake_upstreams import FakeUpstream
from tests.live_server import live_server

SESSION = {
    "model": "gpt-4o",
    "format": "openai",
    "trigger_tokens": 3_000,
    "keep_recent_tokens": 400,
}


def _history(count: int) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Turn {i}: " + " ".join(f"w{i}x{j}" for j in range(120)),
        }
        for i in range(count)
    ]


@pytest.fixture
def summarizer() -> Iterator[OpenAIFake]:
    with OpenAIFake() as fake:
        yield fake


def _settings(database_url: str, upstream: FakeUpstream, summarizer: OpenAIFake) -> Settings:
    return Settings(
        database_url=database_url,
        upstream_openai_url=f"{upstream.base_url}/v1",
        summarizer="openai",
        summarizer_base_url=f"{summarizer.base_url}/v1",
        summarizer_model="gpt-4o-mini",
        summarizer_api_key="sk-summarizer",
        summarizer_max_retries=0,
    )


def _session_over_its_threshold(url: str) -> str:
    sid = str(httpx.post(f"{url}/sessions", json=SESSION).json()["id"])
    appended = httpx.post(f"{url}/sessions/{sid}/messages", json={"messages": _history(20)})
    assert appended.status_code == 200, appended.text
    context = httpx.get(f"{url}/sessions/{sid}/context").json()
    assert context["estimate"]["should_compact"] is True
    return sid


def _chat(url: str, sid: str, text: str) -> httpx.Response:
    # The caller sends only its new message: the session holds the rest.
    return httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": "gpt-4o", "messages": [{"role": "user", "content": text}]},
        headers={"X-Compactor-Session": sid, "Authorization": "Bearer sk-caller"},
        timeout=60,
    )


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
def test_bound_requests_during_a_running_compaction_wait_for_it_instead_of_409(
    database_url: str,
    upstream: FakeUpstream,
    summarizer: OpenAIFake,
    tokenizers: TokenizerRegistry,
) -> None:
    summarizer.delay_seconds = 2.0
    settings = _settings(database_url, upstream, summarizer)
    with ExitStack() as stack:
        one = stack.enter_context(live_server(settings, tokenizers=tokenizers))
        two = stack.enter_context(live_server(settings, tokenizers=tokenizers))
        sid = _session_over_its_threshold(one)
        start = threading.Barrier(3, timeout=20)

        def send(job: tuple[str, str]) -> httpx.Response:
            start.wait()
            return _chat(job[0], sid, job[1])

        jobs = [(one, "question A"), (two, "question B"), (one, "question C")]
        with ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(send, jobs))
        statuses = [a.status_code for a in answers]
        assert statuses == [200, 200, 200], [a.text for a in answers]
        for answer in answers:
            assert answer.json()["choices"][0]["message"]["content"].startswith("Reply to")
        compactions = httpx.get(f"{one}/sessions/{sid}/compactions").json()["compactions"]
        transcript = httpx.get(f"{one}/sessions/{sid}/transcript").json()["messages"]
    # One summary for the three: the others waited for it and forwarded its result.
    assert len(summarizer.received) == 1
    assert len(compactions) == 1
    sent = upstream.bodies("/chat/completions")
    assert len(sent) == 3
    assert all(body["messages"][0]["content"].startswith(SUMMARY_MARKER_PREFIX) for body in sent)
    # Every question once, every reply once.
    texts = [m["content"] for m in transcript[20:]]
    assert sorted(t for t in texts if t.startswith("question")) == [
        "question A",
        "question B",
        "question C",
    ]
    assert sum(1 for m in transcript[20:] if m["role"] == "assistant") == 3


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_failing_summarizer_forwards_the_bound_context_uncompacted_and_records_the_reply(
    database_url: str,
    upstream: FakeUpstream,
    summarizer: OpenAIFake,
    tokenizers: TokenizerRegistry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="compactor.compaction")
    summarizer.script(*[Reply.status_only(500, {"error": {"message": "down"}})] * 5)
    settings = _settings(database_url, upstream, summarizer)
    with live_server(settings, tokenizers=tokenizers) as url:
        sid = _session_over_its_threshold(url)
        answer = _chat(url, sid, "one more question")
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-compactor-compacted"] == "false"
        transcript = httpx.get(f"{url}/sessions/{sid}/transcript").json()["messages"]
        metrics = httpx.get(f"{url}/metrics").text
    assert summarizer.received, "the summarizer was asked"
    # The model was called with the whole context, uncompacted.
    sent = upstream.bodies("/chat/completions")[-1]["messages"]
    assert len(sent) == 21
    assert not any(str(m["content"]).startswith(SUMMARY_MARKER_PREFIX) for m in sent)
    assert sent[-1] == {"role": "user", "content": "one more question"}
    # The turn is complete in the transcript: the question and the model's reply.
    assert [m["role"] for m in transcript[-2:]] == ["user", "assistant"]
    assert transcript[-1]["content"].startswith("Reply to 21 items")
    failed = [
        vars(r)
        for r in caplog.records
        if r.name == "compactor.compaction" and r.msg == "compaction_failed"
    ]
    assert len(failed) == 1
    assert failed[0]["session_id"] == sid and failed[0]["trigger"] == "auto"
    assert failed[0]["error"] == "SummarizerUnavailableError"
    assert re.search(
        r'compactor_compactions_total\{outcome="failed",trigger="auto"\} 1\.0', metrics
    )


def _leave_lease(database_url: str, sid: str, until: datetime) -> None:
    """A lease as a replica killed mid-summary leaves it (never released)."""
    engine = create_db_engine(database_url)
    try:
        with engine.begin() as db:
            db.execute(
                update(SessionRow)
                .where(SessionRow.id == sid)
                .values(compaction_lease_owner="killed-replica", compaction_lease_until=until)
            )
    finally:
        engine.dispose()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_lease_left_by_a_dead_replica_is_waited_for_boundedly_and_runs_out(
    database_url: str,
    upstream: FakeUpstream,
    summarizer: OpenAIFake,
    tokenizers: TokenizerRegistry,
) -> None:
    settings = _settings(database_url, upstream, summarizer).model_copy(
        update={"bound_compaction_wait_seconds": 0.3}
    )
    with live_server(settings, tokenizers=tokenizers) as url:
        sid = _session_over_its_threshold(url)
        _leave_lease(database_url, sid, datetime.now(UTC) + timedelta(hours=1))
        # Still held: the request waits (bounded), then forwards the context as it is.
        held = _chat(url, sid, "while the lease is held")
        assert held.status_code == 200, held.text
        assert held.headers["x-compactor-compacted"] == "false"
        assert not summarizer.received
        assert len(upstream.bodies("/chat/completions")[-1]["messages"]) == 21
        # Run out: the next request compacts the session itself.
        _leave_lease(database_url, sid, datetime.now(UTC) - timedelta(seconds=1))
        after = _chat(url, sid, "after the lease ran out")
        assert after.status_code == 200, after.text
        assert after.headers["x-compactor-compacted"] == "true"
        assert len(summarizer.received) == 1
        sent = upstream.bodies("/chat/completions")[-1]["messages"]
        assert sent[0]["content"].startswith(SUMMARY_MARKER_PREFIX)
        transcript = httpx.get(f"{url}/sessions/{sid}/transcript").json()["messages"]
    assert [m["role"] for m in transcript[20:]] == ["user", "assistant", "user", "assistant"]
