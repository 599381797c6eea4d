"""The Python clients' asynchronous compaction (SPEC §16): start_compaction answers with a
queued or running job before the summary is written, wait_for_job polls it to the end
(telling on_progress of each answer) and hands back its record, or raises the job's
problem when it failed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from context_compactor import (
    AsyncCompactorClient,
    CompactionJob,
    CompactorAPIError,
    CompactorClient,
)

from tests.integration.fake_providers import OpenAIFake, Reply
from tests.integration.test_compaction_jobs import ALPHA_KEY, history, service_settings
from tests.live_server import live_server


@pytest.fixture
def summarizer() -> Iterator[OpenAIFake]:
    with OpenAIFake() as fake:
        yield fake


@pytest.fixture
def service(tmp_path: Path, migrated_sqlite: Path, summarizer: OpenAIFake) -> Iterator[str]:
    with live_server(service_settings(tmp_path, migrated_sqlite, summarizer)) as url:
        yield url


def _session(client: CompactorClient) -> str:
    session = client.create_session(model="gpt-4o", reserve_tokens=2_000, keep_recent_tokens=1_000)
    client.append_messages(session.id, history())
    return session.id


def test_sync_client_starts_a_job_and_waits_for_its_record(
    service: str, summarizer: OpenAIFake
) -> None:
    summarizer.script(Reply.ok(), Reply.held())
    seen: list[CompactionJob] = []

    def on_progress(job: CompactionJob) -> None:
        seen.append(job)
        if job.progress.chunks_done >= 1:
            summarizer.release.set()  # the first chunk is in: let the rest through

    with CompactorClient(service, ALPHA_KEY) as client:
        session_id = _session(client)
        job = client.start_compaction(session_id, instructions="Keep names.")
        assert job.state in ("queued", "running") and job.compaction is None
        done = client.wait_for_job(job, poll_interval=0.02, on_progress=on_progress)
        assert done.state == "done" and done.compaction is not None
        assert done.compaction.instructions == "Keep names."
        assert [r.id for r in client.compactions(session_id)] == [done.compaction.id]
    midway = [j for j in seen if j.state == "running" and j.progress.chunks_total]
    assert midway, "no progress was reported while the job ran"
    total = midway[0].progress.chunks_total
    assert total is not None and total >= 2
    assert done.progress.chunks_done == total


def test_sync_client_raises_the_problem_of_a_failed_job(
    service: str, summarizer: OpenAIFake
) -> None:
    summarizer.script(Reply.empty())
    with CompactorClient(service, ALPHA_KEY) as client:
        job = client.start_compaction(_session(client))
        with pytest.raises(CompactorAPIError) as failed:
            client.wait_for_job(job, poll_interval=0.02)
    assert failed.value.status == 502
    assert failed.value.type.endswith("/summarizer-failed")


def test_sync_client_gives_up_waiting_at_its_timeout(service: str, summarizer: OpenAIFake) -> None:
    summarizer.script(Reply.held())
    with CompactorClient(service, ALPHA_KEY) as client:
        job = client.start_compaction(_session(client))
        with pytest.raises(CompactorAPIError) as waited:
            client.wait_for_job(job, poll_interval=0.02, timeout=0.2)
        assert waited.value.status == 0
        summarizer.release.set()
        assert client.wait_for_job(job, poll_interval=0.02).state == "done"


def test_async_client_starts_a_job_and_waits_for_its_record(service: str) -> None:
    with CompactorClient(service, ALPHA_KEY) as client:
        session_id = _session(client)

    async def run() -> CompactionJob:
        async with AsyncCompactorClient(service, ALPHA_KEY) as client:
            job = await client.start_compaction(session_id)
            again = await client.compaction_job(session_id, job.id)
            assert again.id == job.id
            return await client.wait_for_job(job, poll_interval=0.02)

    done = asyncio.run(run())
    assert done.state == "done" and done.compaction is not None
    assert done.compaction.trigger == "manual"
