"""Compactions asked for asynchronously (SPEC §16): `Prefer: respond-async` answers 202
with the job's `Location` before the summary is written; the job goes queued → running
(chunks folded of the total) → done with the record the inline compaction would have
made, or failed with the problem it would have answered.

The summarizer is a loopback fake whose replies the test holds and releases: what the
tests see is what the job reports at each point, never how long anything took.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.settings import Settings
from tests.conftest import migrated_copy
from tests.e2e.serve_process import serve
from tests.integration.fake_providers import OpenAIFake, Reply
from tests.live_server import live_server

ALPHA_KEY = "sk-alpha-5b7e1f0c9a2d4e6f"
BETA_KEY = "sk-beta-8c3a9d1e7f2b4a6c"
ALPHA = {"Authorization": f"Bearer {ALPHA_KEY}"}
BETA = {"Authorization": f"Bearer {BETA_KEY}"}
ASYNC = {**ALPHA, "Prefer": "respond-async"}
PROBLEM = "application/problem+json"
# A summarizer window this small folds the history below in several chunks.
TINY = {"provider": "openai", "context_window": 6_000, "max_output_tokens": 1_000}


@pytest.fixture
def summarizer() -> Iterator[OpenAIFake]:
    with OpenAIFake() as fake:
        yield fake


def service_settings(tmp_path: Path, migrated_sqlite: Path, summarizer: OpenAIFake) -> Settings:
    models_file = tmp_path / "models.json"
    models_file.write_text(json.dumps({"models": {"tiny-summarizer": TINY}}))
    database = tmp_path / "compactor.db"
    return Settings(
        database_url=f"sqlite:///{database}"
        if database.exists()
        else migrated_copy(migrated_sqlite, tmp_path),
        api_keys=f"alpha:{ALPHA_KEY},beta:{BETA_KEY}",
        summarizer="openai",
        summarizer_base_url=f"{summarizer.base_url}/v1",
        summarizer_model="tiny-summarizer",
        summarizer_api_key="sk-summarizer",
        models_file=models_file,
        # No recall line naming the session in summaries: two sessions' records compare.
        mcp=False,
    )


@pytest.fixture
def service(tmp_path: Path, migrated_sqlite: Path, summarizer: OpenAIFake) -> Iterator[str]:
    with live_server(service_settings(tmp_path, migrated_sqlite, summarizer)) as url:
        yield url


def history(turns: int = 24) -> list[dict[str, Any]]:
    """A conversation of `turns` exchanges, a few hundred tokens each."""
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        words = " ".join(f"w{i}x{j}" for j in range(300))
        messages.append({"role": "user", "content": f"Question {i}: {words}"})
        messages.append({"role": "assistant", "content": f"Answer {i}: noted."})
    return messages


def new_session(client: httpx.Client, turns: int = 24) -> str:
    created = client.post(
        "/sessions",
        json={"model": "gpt-4o", "reserve_tokens": 2_000, "keep_recent_tokens": 1_000},
        headers=ALPHA,
    )
    assert created.status_code == 201, created.text
    session_id: str = created.json()["id"]
    appended = client.post(
        f"/sessions/{session_id}/messages", json={"messages": history(turns)}, headers=ALPHA
    )
    assert appended.status_code == 200, appended.text
    return session_id


def poll(client: httpx.Client, location: str, until: Any) -> dict[str, Any]:
    """GETs the job until `until(job)` holds (the deadline is a safety net only)."""
    deadline = time.monotonic() + 60
    while True:
        answer = client.get(location, headers=ALPHA)
        assert answer.status_code == 200, answer.text
        job: dict[str, Any] = answer.json()
        if until(job):
            return job
        assert time.monotonic() < deadline, f"the job stayed {job}"
        time.sleep(0.02)


def test_202_before_the_summary_then_running_with_progress_then_done(
    service: str, summarizer: OpenAIFake
) -> None:
    # The first chunk is answered at once, the second is held: the job is seen mid-way.
    summarizer.script(Reply.ok(), Reply.held())
    with httpx.Client(base_url=service, timeout=30) as client:
        session_id = new_session(client)
        started = client.post(f"/sessions/{session_id}/compact", json={}, headers=ASYNC)
        assert started.status_code == 202, started.text
        location = started.headers["location"]
        assert started.headers["preference-applied"] == "respond-async"
        job = started.json()
        assert location == f"/sessions/{session_id}/jobs/{job['id']}"
        assert job["state"] in ("queued", "running")
        assert job["compaction"] is None
        # Answered while the summary is still being written: nothing is recorded yet.
        assert client.get(f"/sessions/{session_id}/compactions", headers=ALPHA).json() == {
            "compactions": []
        }

        midway = poll(client, location, lambda j: j["progress"]["chunks_done"] >= 1)
        assert midway["state"] == "running"
        total = midway["progress"]["chunks_total"]
        assert total is not None and total >= 2
        assert midway["progress"]["chunks_done"] < total

        summarizer.release.set()
        done = poll(client, location, lambda j: j["state"] != "running")
        assert done["state"] == "done", done
        assert done["progress"] == {"chunks_done": total, "chunks_total": total}
        assert done["problem"] is None
        records = client.get(f"/sessions/{session_id}/compactions", headers=ALPHA).json()
        assert [r["id"] for r in records["compactions"]] == [done["compaction"]["id"]]
        assert done["compaction"]["trigger"] == "manual"


def test_the_record_is_the_one_the_inline_compaction_makes(service: str) -> None:
    with httpx.Client(base_url=service, timeout=60) as client:
        background, inline = new_session(client), new_session(client)
        started = client.post(
            f"/sessions/{background}/compact", json={"instructions": "Keep names."}, headers=ASYNC
        )
        assert started.status_code == 202, started.text
        job = poll(client, started.headers["location"], lambda j: j["state"] != "queued")
        job = poll(client, started.headers["location"], lambda j: j["state"] != "running")
        answered = client.post(
            f"/sessions/{inline}/compact", json={"instructions": "Keep names."}, headers=ALPHA
        )
        assert answered.status_code == 200, answered.text
        expected = answered.json()["compaction"]
        assert job["state"] == "done"
        ignore = {"id", "created_at"}
        assert {k: v for k, v in job["compaction"].items() if k not in ignore} == {
            k: v for k, v in expected.items() if k not in ignore
        }
        # And the session's context is the compacted one, as after the inline compaction.
        assert (
            client.get(f"/sessions/{background}/context", headers=ALPHA).json()["messages"]
            == client.get(f"/sessions/{inline}/context", headers=ALPHA).json()["messages"]
        )


def test_a_failed_summary_fails_the_job_with_its_problem_and_writes_nothing(
    service: str, summarizer: OpenAIFake
) -> None:
    summarizer.script(Reply.empty())
    with httpx.Client(base_url=service, timeout=30) as client:
        session_id = new_session(client, turns=4)
        started = client.post(f"/sessions/{session_id}/compact", json={}, headers=ASYNC)
        assert started.status_code == 202, started.text
        job = poll(client, started.headers["location"], lambda j: j["state"] == "failed")
        assert job["compaction"] is None
        problem = job["problem"]
        assert problem["status"] == 502
        assert problem["type"].endswith("/summarizer-failed")
        assert "empty summary" in problem["detail"]
        assert client.get(f"/sessions/{session_id}/compactions", headers=ALPHA).json() == {
            "compactions": []
        }


def test_a_summary_failing_mid_job_writes_nothing_and_a_later_compaction_works(
    service: str, summarizer: OpenAIFake
) -> None:
    # The first chunk is folded, the second one's summary fails: half a compaction.
    summarizer.script(Reply.ok(), Reply.empty())
    with httpx.Client(base_url=service, timeout=30) as client:
        session_id = new_session(client)
        context = client.get(f"/sessions/{session_id}/context", headers=ALPHA).json()
        started = client.post(f"/sessions/{session_id}/compact", json={}, headers=ASYNC)
        assert started.status_code == 202, started.text
        job = poll(client, started.headers["location"], lambda j: j["state"] == "failed")
        assert job["compaction"] is None
        assert job["problem"]["status"] == 502
        assert "empty summary" in job["problem"]["detail"]
        progress = job["progress"]
        assert progress["chunks_total"] >= 2 and progress["chunks_done"] == 1
        # Nothing of the chunk that was folded was kept: no record, the same context.
        assert client.get(f"/sessions/{session_id}/compactions", headers=ALPHA).json() == {
            "compactions": []
        }
        assert client.get(f"/sessions/{session_id}/context", headers=ALPHA).json() == context
        # Asked again, the compaction folds every chunk and is recorded.
        again = client.post(f"/sessions/{session_id}/compact", json={}, headers=ASYNC)
        done = poll(client, again.headers["location"], lambda j: j["state"] in ("done", "failed"))
        assert done["state"] == "done", done
        records = client.get(f"/sessions/{session_id}/compactions", headers=ALPHA).json()
        assert [r["id"] for r in records["compactions"]] == [done["compaction"]["id"]]


def test_nothing_to_compact_fails_the_job_with_409(service: str) -> None:
    with httpx.Client(base_url=service, timeout=30) as client:
        created = client.post("/sessions", json={}, headers=ALPHA).json()
        started = client.post(f"/sessions/{created['id']}/compact", json={}, headers=ASYNC)
        assert started.status_code == 202, started.text
        job = poll(client, started.headers["location"], lambda j: j["state"] == "failed")
        assert job["problem"]["status"] == 409
        assert job["problem"]["type"].endswith("/nothing-to-compact")


def test_unknown_jobs_and_other_tenants_jobs_are_404_problems(service: str) -> None:
    with httpx.Client(base_url=service, timeout=30) as client:
        session_id = new_session(client, turns=4)
        started = client.post(f"/sessions/{session_id}/compact", json={}, headers=ASYNC)
        location = started.headers["location"]
        poll(client, location, lambda j: j["state"] == "done")

        unknown = client.get(f"/sessions/{session_id}/jobs/no-such-job", headers=ALPHA)
        assert unknown.status_code == 404
        assert unknown.headers["content-type"] == PROBLEM
        assert unknown.json()["type"].endswith("/job-not-found")

        other_tenant = client.get(location, headers=BETA)
        assert other_tenant.status_code == 404
        assert other_tenant.headers["content-type"] == PROBLEM
        # Nor can another tenant start one on the session.
        refused = client.post(
            f"/sessions/{session_id}/compact", json={}, headers={**BETA, "Prefer": "respond-async"}
        )
        assert refused.status_code == 404
        assert refused.headers["content-type"] == PROBLEM
        # The job is its session's: not found under another session of the same tenant.
        other_session = client.post("/sessions", json={}, headers=ALPHA).json()["id"]
        job_id = location.rsplit("/", 1)[-1]
        moved = client.get(f"/sessions/{other_session}/jobs/{job_id}", headers=ALPHA)
        assert moved.status_code == 404


def test_without_the_preference_the_compaction_is_answered_inline(service: str) -> None:
    with httpx.Client(base_url=service, timeout=30) as client:
        session_id = new_session(client, turns=4)
        answered = client.post(
            f"/sessions/{session_id}/compact",
            json={},
            headers={**ALPHA, "Prefer": "return=minimal"},
        )
        assert answered.status_code == 200
        assert "preference-applied" not in answered.headers
        assert answered.json()["compacted"] is True


def test_a_job_running_at_shutdown_is_abandoned_and_nothing_is_written(
    tmp_path: Path, migrated_sqlite: Path, summarizer: OpenAIFake
) -> None:
    summarizer.script(Reply.held())
    settings = service_settings(tmp_path, migrated_sqlite, summarizer)
    with live_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
        session_id = new_session(client, turns=4)
        started = client.post(f"/sessions/{session_id}/compact", json={}, headers=ASYNC)
        location = started.headers["location"]
        assert summarizer.request_arrived.wait(30), "the summary never started"
        poll(client, location, lambda j: j["state"] == "running")
    # The service stopped mid-summary; the summary it was waiting for comes too late.
    summarizer.release.set()
    with live_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
        job = client.get(location, headers=ALPHA).json()
        assert job["state"] == "abandoned"
        assert job["problem"]["status"] == 503
        assert job["problem"]["type"].endswith("/job-abandoned")
        assert client.get(f"/sessions/{session_id}/compactions", headers=ALPHA).json() == {
            "compactions": []
        }
        # Asked again, the compaction runs to the end.
        again = client.post(f"/sessions/{session_id}/compact", json={}, headers=ASYNC)
        assert poll(client, again.headers["location"], lambda j: j["state"] == "done")


def test_a_job_whose_process_was_killed_reads_abandoned_after_its_lease(
    tmp_path: Path, summarizer: OpenAIFake
) -> None:
    """SIGKILL: no shutdown ran, nothing marked the job; its heartbeat stops, and once a
    whole lease has gone by without one the job reads as abandoned. Nothing of it was
    written, and the compaction asked again runs to the end."""
    summarizer.script(Reply.held())
    models_file = tmp_path / "models.json"
    models_file.write_text(json.dumps({"models": {"tiny-summarizer": TINY}}))
    env: dict[str, str | None] = {
        "COMPACTOR_API_KEYS": f"alpha:{ALPHA_KEY},beta:{BETA_KEY}",
        "COMPACTOR_SUMMARIZER": "openai",
        "COMPACTOR_SUMMARIZER_BASE_URL": f"{summarizer.base_url}/v1",
        "COMPACTOR_SUMMARIZER_MODEL": "tiny-summarizer",
        "COMPACTOR_SUMMARIZER_API_KEY": "sk-summarizer",
        "COMPACTOR_MODELS_FILE": str(models_file),
        "COMPACTOR_MCP": "off",
        # A short lease: the dead job's missing heartbeat shows after 2 s, not 30.
        "COMPACTOR_COMPACTION_LEASE_SECONDS": "2",
    }
    with serve(tmp_path, env=env) as served, httpx.Client(base_url=served.url) as client:
        session_id = new_session(client, turns=4)
        started = client.post(f"/sessions/{session_id}/compact", json={}, headers=ASYNC)
        assert started.status_code == 202, started.text
        location = started.headers["location"]
        assert summarizer.request_arrived.wait(30), "the summary never started"
        poll(client, location, lambda j: j["state"] == "running")
        served.process.send_signal(signal.SIGKILL)
        served.process.wait(timeout=30)
    summarizer.release.set()
    with serve(tmp_path, env=env) as served, httpx.Client(base_url=served.url) as client:
        job = poll(client, location, lambda j: j["state"] != "running")
        assert job["state"] == "abandoned"
        assert job["problem"]["type"].endswith("/job-abandoned")
        assert client.get(f"/sessions/{session_id}/compactions", headers=ALPHA).json() == {
            "compactions": []
        }
        summarizer.script(Reply.ok())
        again = client.post(f"/sessions/{session_id}/compact", json={}, headers=ASYNC)
        done = poll(client, again.headers["location"], lambda j: j["state"] in ("done", "failed"))
        assert done["state"] == "done", done
