"""SQL of asynchronous compaction jobs (table `compaction_jobs`, SPEC §16): flush, never
commit. A job is read only by its tenant, through its session; expired jobs are deleted
a batch at a time as new ones are made."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from app.engine.compaction.strategy import StrategyName
from app.engine.thinking import ThinkingLevel
from app.store.mapping import aware
from app.store.models import CompactionJobRow
from app.store.views import CompactionJobView, JobFailure, JobRequest

# The states a job leaves only by finishing (or by its process dying).
UNFINISHED = ("queued", "running")


class CompactionJobRepository:
    """Adds jobs, records their progress and outcome, reads them back."""

    def __init__(self, db: Session) -> None:
        self.db = db

    def add(
        self, job_id: str, tenant: str, session_id: str, request: JobRequest, now: datetime
    ) -> CompactionJobView:
        """A new job, queued."""
        row = CompactionJobRow(
            id=job_id,
            tenant=tenant,
            session_id=session_id,
            state="queued",
            request=_request_json(request),
            chunks_done=0,
            chunks_total=None,
            created_at=now,
            heartbeat_at=now,
        )
        self.db.add(row)
        self.db.flush()
        return _view(row)

    def get(
        self, tenant: str, session_id: str, job_id: str, not_before: datetime
    ) -> CompactionJobView | None:
        """The tenant's job of that session, unless it was made before `not_before`."""
        row = self.db.scalar(
            select(CompactionJobRow).where(
                CompactionJobRow.id == job_id,
                CompactionJobRow.tenant == tenant,
                CompactionJobRow.session_id == session_id,
                CompactionJobRow.created_at >= not_before,
            )
        )
        return _view(row) if row is not None else None

    def progress(self, job_id: str, done: int, total: int | None, now: datetime) -> None:
        """Running, `done` chunks of `total` folded; renews the heartbeat. A job already
        finished (abandoned at shutdown, say) stays as it is."""
        self.db.execute(
            update(CompactionJobRow)
            .where(CompactionJobRow.id == job_id, CompactionJobRow.state.in_(UNFINISHED))
            .values(state="running", chunks_done=done, chunks_total=total, heartbeat_at=now)
        )

    def finish(
        self,
        job_id: str,
        state: str,
        now: datetime,
        *,
        compaction_id: str | None = None,
        failure: JobFailure | None = None,
        chunks: tuple[int, int | None] | None = None,
    ) -> bool:
        """Records the outcome of an unfinished job; False when it had finished already."""
        values: dict[str, Any] = {
            "state": state,
            "compaction_id": compaction_id,
            "error": {"kind": failure.kind, "detail": failure.detail} if failure else None,
            "finished_at": now,
            "heartbeat_at": now,
        }
        if chunks is not None:
            values["chunks_done"], values["chunks_total"] = chunks
        done = self.db.execute(
            update(CompactionJobRow)
            .where(CompactionJobRow.id == job_id, CompactionJobRow.state.in_(UNFINISHED))
            .values(**values)
        )
        return bool(getattr(done, "rowcount", 0))

    def delete_expired(self, not_before: datetime, limit: int) -> None:
        """Deletes up to `limit` jobs made before `not_before`, oldest first."""
        expired = (
            select(CompactionJobRow.id)
            .where(CompactionJobRow.created_at < not_before)
            .order_by(CompactionJobRow.created_at)
            .limit(limit)
        )
        self.db.execute(
            delete(CompactionJobRow)
            .where(CompactionJobRow.id.in_(expired))
            .execution_options(synchronize_session=False)
        )


def _request_json(request: JobRequest) -> dict[str, Any]:
    return {
        "reason": request.reason,
        "instructions": request.instructions,
        "thinking": request.thinking.value if request.thinking else None,
        "strategy": request.strategy.value if request.strategy else None,
    }


def _view(row: CompactionJobRow) -> CompactionJobView:
    stored = row.request or {}
    thinking, strategy = stored.get("thinking"), stored.get("strategy")
    error = row.error
    return CompactionJobView(
        id=row.id,
        tenant=row.tenant,
        session_id=row.session_id,
        state=row.state,
        request=JobRequest(
            reason=str(stored.get("reason") or "manual"),
            instructions=stored.get("instructions"),
            thinking=ThinkingLevel(thinking) if thinking else None,
            strategy=StrategyName(strategy) if strategy else None,
        ),
        chunks_done=row.chunks_done,
        chunks_total=row.chunks_total,
        compaction_id=row.compaction_id,
        failure=JobFailure(str(error.get("kind")), str(error.get("detail"))) if error else None,
        created_at=aware(row.created_at),
        heartbeat_at=aware(row.heartbeat_at),
        finished_at=aware(row.finished_at) if row.finished_at is not None else None,
    )
