"""Asynchronous compaction jobs (SPEC §16): `GET /sessions/{id}/jobs/{job}`."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from app.api.problems import Problem
from app.api.schemas.sessions import CompactionOut

JobState = Literal["queued", "running", "done", "failed", "abandoned"]


class JobProgressOut(BaseModel):
    chunks_done: int = Field(description="Chunks of the history folded into the summary so far.")
    chunks_total: int | None = Field(
        description="Chunks in all (a long history is folded in several when it does not fit "
        "the summarizer's window); null until the history is split."
    )


class CompactionJobOut(BaseModel):
    """A compaction asked for with `Prefer: respond-async`."""

    id: str
    session_id: str
    state: JobState = Field(
        description="queued, running, done (see `compaction`), failed (see `problem`), or "
        "abandoned: the service stopped before it finished and nothing of it was written."
    )
    progress: JobProgressOut
    created_at: datetime
    finished_at: datetime | None = None
    compaction: CompactionOut | None = Field(
        default=None, description="The compaction record, once done."
    )
    problem: Problem | None = Field(
        default=None,
        description="Why it failed or was abandoned: the problem the inline compaction "
        "would have answered.",
    )
