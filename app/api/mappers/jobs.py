"""A compaction job's view → its HTTP answer (the failure as its problem document)."""

from __future__ import annotations

from app.api.mappers.sessions import compaction_out
from app.api.problems import INTERNAL_ERROR, PROBLEM_TYPES, Problem, ProblemType
from app.api.schemas.jobs import CompactionJobOut, JobProgressOut
from app.services.sessions.service import JobOutcome
from app.services.sessions.views import JobFailure

# The stored failure names its error class: the problem type of that class, by name.
_BY_NAME: dict[str, ProblemType] = {
    kind.__name__: problem for kind, problem in PROBLEM_TYPES.items()
}


def job_out(outcome: JobOutcome) -> CompactionJobOut:
    job = outcome.job
    return CompactionJobOut(
        id=job.id,
        session_id=job.session_id,
        state=job.state,
        progress=JobProgressOut(chunks_done=job.chunks_done, chunks_total=job.chunks_total),
        created_at=job.created_at,
        finished_at=job.finished_at,
        compaction=compaction_out(outcome.record) if outcome.record is not None else None,
        problem=_problem(job.failure) if job.failure is not None else None,
    )


def _problem(failure: JobFailure) -> Problem:
    kind = _BY_NAME.get(failure.kind, INTERNAL_ERROR)
    detail = failure.detail if kind is not INTERNAL_ERROR else "the compaction failed unexpectedly"
    return Problem(
        type=f"https://context-compactor.dev/problems/{kind.slug}",
        title=kind.title,
        status=kind.status,
        detail=detail,
    )
