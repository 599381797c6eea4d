"""Compactions asked for asynchronously (SPEC §16: `Prefer: respond-async`).

A job is a row in the store (queued → running → done | failed) and a task of this
process. The task runs the same manual compaction the inline route runs, telling the row
how many chunks are folded as it goes (and renewing its heartbeat); the outcome is
written in the transaction of the compaction record, so a job is `done` exactly when its
record exists. When the process shuts down, running jobs are cancelled (the summary is
dropped, nothing of it is written) and marked `abandoned`; a job whose process died
without saying so stops renewing its heartbeat and reads as `abandoned` once it is older
than the heartbeat's lease.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import anyio

from app.engine.errors import CompactorError
from app.services.background import CancelledOnExit
from app.services.sessions.compactions import SessionCompactor
from app.services.sessions.errors import (
    JobAbandonedError,
    JobNotFoundError,
    JobsStoppedError,
)
from app.services.sessions.transactions import SessionStore
from app.store.compaction_jobs import UNFINISHED
from app.store.errors import StoreError
from app.store.transactions import StoreTransaction
from app.store.views import CompactionJobView, CompactionRecord, JobFailure, JobRequest

T = TypeVar("T")
log = logging.getLogger(__name__)

DEFAULT_JOB_RETENTION = timedelta(hours=24)
# Expired jobs deleted per new job: the clean-up keeps pace without a long delete.
_EXPIRED_BATCH = 100

ABANDONED = JobFailure(
    JobAbandonedError.__name__,
    "the service stopped before this compaction finished; nothing of it was written; "
    "ask for the compaction again",
)


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """A job as its caller sees it, with its compaction record once done."""

    job: CompactionJobView
    record: CompactionRecord | None


class _Progress:
    """Chunks folded so far, told by the summary (on the event loop) and read by the
    heartbeat, which writes a change at once."""

    def __init__(self) -> None:
        self.done = 0
        self.total: int | None = None
        self.changed = anyio.Event()

    def update(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        self.changed.set()


class CompactionJobs(CancelledOnExit):
    """Starts compaction jobs in the background of this process and reads them back.
    Runs inside `async with` (the app's lifespan): leaving it cancels every job."""

    def __init__(
        self,
        store: SessionStore,
        compactor: SessionCompactor,
        retention: timedelta = DEFAULT_JOB_RETENTION,
        heartbeat: timedelta = timedelta(seconds=30),
    ) -> None:
        self._store = store
        self._compactor = compactor
        self._retention = retention
        self._heartbeat = heartbeat
        super().__init__()

    async def start(self, tenant: str, session_id: str, request: JobRequest) -> CompactionJobView:
        """A new queued job of the tenant's session, already running in the background."""
        if self._group is None:
            raise JobsStoppedError("the service is shutting down; ask again in a moment")
        job = await _in_thread(self._add, tenant, session_id, request)
        self._group.start_soon(self._run, job)
        return job

    def get(self, tenant: str, session_id: str, job_id: str) -> JobOutcome:
        """The tenant's job of that session, with its record once done."""
        now = datetime.now(UTC)
        with self._store.transaction() as tx:
            self._store.require(tx, tenant, session_id)
            job = tx.jobs.get(tenant, session_id, job_id, now - self._retention)
            if job is None:
                raise JobNotFoundError(f"compaction job {job_id} of session {session_id} not found")
            record = (
                tx.compactions.get(session_id, job.compaction_id) if job.compaction_id else None
            )
        if job.state in UNFINISHED and job.heartbeat_at < now - self._heartbeat:
            # Its process died without a word (a crash): no heartbeat for a whole lease.
            job = replace(job, state="abandoned", failure=ABANDONED)
        return JobOutcome(job, record)

    def _add(self, tenant: str, session_id: str, request: JobRequest) -> CompactionJobView:
        now = datetime.now(UTC)
        with self._store.transaction() as tx:
            self._store.require(tx, tenant, session_id)
            tx.jobs.delete_expired(now - self._retention, _EXPIRED_BATCH)
            return tx.jobs.add(str(uuid.uuid4()), tenant, session_id, request, now)

    async def _run(self, job: CompactionJobView) -> None:
        progress = _Progress()
        stop = anyio.Event()
        assert self._group is not None
        self._group.start_soon(self._beat, job.id, progress, stop)
        request = job.request
        try:
            await self._compactor.compact(
                job.tenant,
                job.session_id,
                request.reason,
                request.instructions,
                request.thinking,
                strategy=request.strategy,
                progress=progress.update,
                on_recorded=partial(_done, job.id, progress),
            )
        except anyio.get_cancelled_exc_class():
            # Shutting down: the summary is dropped and nothing of it was written.
            with anyio.CancelScope(shield=True):
                await self._finish(job.id, "abandoned", ABANDONED, progress)
            raise
        except CompactorError as exc:
            await self._finish(job.id, "failed", JobFailure(type(exc).__name__, str(exc)), progress)
        except Exception as exc:
            # A bug of ours: the job says so (a 500 problem) instead of running forever.
            log.exception("compaction job failed", extra={"job_id": job.id})
            await self._finish(job.id, "failed", JobFailure(type(exc).__name__, str(exc)), progress)
        finally:
            stop.set()

    async def _beat(self, job_id: str, progress: _Progress, stop: anyio.Event) -> None:
        """Writes the progress when it changes, and at least every third of the
        heartbeat's lease (the job is alive), until `stop`."""
        await _in_thread(self._write_progress, job_id, progress)
        while not stop.is_set():
            with anyio.move_on_after(self._heartbeat.total_seconds() / 3):
                await _first_of(progress.changed, stop)
            if stop.is_set():
                return
            progress.changed = anyio.Event()
            await _in_thread(self._write_progress, job_id, progress)

    def _write_progress(self, job_id: str, progress: _Progress) -> None:
        # A store away now is tried again at the next beat.
        try:
            with self._store.transaction() as tx:
                tx.jobs.progress(job_id, progress.done, progress.total, datetime.now(UTC))
        except (CompactorError, StoreError) as exc:
            log.warning("job progress not written", extra={"error": type(exc).__name__})

    async def _finish(
        self, job_id: str, state: str, failure: JobFailure, progress: _Progress
    ) -> None:
        def write() -> None:
            with self._store.transaction() as tx:
                tx.jobs.finish(
                    job_id,
                    state,
                    datetime.now(UTC),
                    failure=failure,
                    chunks=(progress.done, progress.total),
                )

        try:
            await _in_thread(write)
        except (CompactorError, StoreError) as exc:
            # The heartbeat stops now: the job reads as abandoned after its lease.
            log.warning("job outcome not written", extra={"error": type(exc).__name__})


def _done(job_id: str, progress: _Progress, tx: StoreTransaction, record: CompactionRecord) -> None:
    """The job's outcome, in the transaction of its compaction record."""
    total = progress.total
    tx.jobs.finish(
        job_id,
        "done",
        record.created_at,
        compaction_id=record.id,
        chunks=(total if total is not None else progress.done, total),
    )


async def _first_of(*events: anyio.Event) -> None:
    """Returns once any of `events` is set."""
    async with anyio.create_task_group() as group:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            group.cancel_scope.cancel()

        for event in events:
            group.start_soon(wait, event)


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    return await anyio.to_thread.run_sync(fn, *args)
