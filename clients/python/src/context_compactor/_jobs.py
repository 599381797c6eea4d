"""Asynchronous compaction jobs (`Prefer: respond-async`): the job's answer and what
waiting for one needs, shared by both clients."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from context_compactor import _fields as f
from context_compactor._errors import CompactorAPIError
from context_compactor._session_models import CompactionRecord
from context_compactor._types import JOB_STATES, JobState

# The states a job does not leave.
FINISHED: tuple[JobState, ...] = ("done", "failed", "abandoned")
DEFAULT_POLL_INTERVAL = 0.5


@dataclass(frozen=True)
class JobProgress:
    """Chunks of the history folded so far, of the total (None until it is split)."""

    chunks_done: int
    chunks_total: int | None

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> JobProgress:
        return cls(f.integer(raw, "chunks_done"), f.opt_integer(raw, "chunks_total"))


@dataclass(frozen=True)
class JobProblem:
    """Why a job failed or was abandoned: the problem the inline compaction would answer."""

    type: str
    title: str
    status: int
    detail: str
    errors: list[dict[str, Any]] | None = None

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> JobProblem:
        errors = raw.get("errors")
        return cls(
            type=f.text(raw, "type"),
            title=f.text(raw, "title"),
            status=f.integer(raw, "status"),
            detail=f.text(raw, "detail"),
            errors=errors if isinstance(errors, list) else None,
        )


@dataclass(frozen=True)
class CompactionJob:
    """A compaction running in the service's background."""

    id: str
    session_id: str
    state: JobState
    progress: JobProgress
    created_at: datetime
    finished_at: datetime | None
    compaction: CompactionRecord | None
    """The record, once `done`."""
    problem: JobProblem | None
    """Why, once `failed` or `abandoned`."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def finished(self) -> bool:
        """True once the job is done, failed or abandoned."""
        return self.state in FINISHED

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> CompactionJob:
        compaction = f.opt_obj(raw, "compaction")
        problem = f.opt_obj(raw, "problem")
        finished_at = raw.get("finished_at")
        return cls(
            id=f.text(raw, "id"),
            session_id=f.text(raw, "session_id"),
            state=f.one_of(raw, "state", JOB_STATES),
            progress=JobProgress.parse(f.obj(raw, "progress")),
            created_at=f.timestamp(raw, "created_at"),
            finished_at=f.timestamp(raw, "finished_at") if finished_at is not None else None,
            compaction=CompactionRecord.parse(compaction) if compaction is not None else None,
            problem=JobProblem.parse(problem) if problem is not None else None,
            raw=raw,
        )


# Told of every job answer while waiting (a progress bar reads `job.progress`).
OnProgress = Callable[[CompactionJob], None]


def finished_job(job: CompactionJob) -> CompactionJob:
    """`job` when done; CompactorAPIError with its problem when it failed or was abandoned."""
    if job.state == "done" or job.problem is None:
        return job
    problem = job.problem
    raise CompactorAPIError(
        problem.status,
        problem.title,
        problem.detail,
        problem.type,
        dict(job.raw.get("problem") or {}),
        method="GET",
        url=f"/sessions/{job.session_id}/jobs/{job.id}",
    )
