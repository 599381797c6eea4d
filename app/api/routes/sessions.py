"""Session endpoints: transcripts, context, the before-turn `prepare`, compactions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Path, Query, Request, Response

from app.api.auth import Tenant
from app.api.deps import Sessions
from app.api.disconnect import run_until_disconnect
from app.api.limits import MAX_OFFSET
from app.api.mappers.cost import session_cost_out
from app.api.mappers.jobs import job_out
from app.api.mappers.sessions import (
    compaction_out,
    context_out,
    new_session,
    prepare_out,
    session_out,
)
from app.api.mappers.strategy import strategy_name
from app.api.problems import documented
from app.api.routing import OrjsonRoute, answer_off_loop
from app.api.schemas.cost import SessionCostOut
from app.api.schemas.jobs import CompactionJobOut
from app.api.schemas.recall import PrepareIn
from app.api.schemas.sessions import (
    AppendIn,
    AppendOut,
    CompactionListOut,
    ContextOut,
    PrepareOut,
    SessionCompactIn,
    SessionIn,
    SessionListOut,
    SessionOut,
    TranscriptOut,
)
from app.engine.errors import (
    IneffectiveCompactionError,
    InvalidHistoryError,
    NothingToCompactError,
    SummarizerError,
)
from app.services.sessions.errors import (
    CompactionConflictError,
    IdempotencyMismatchError,
    JobNotFoundError,
    JobsStoppedError,
    RejectedValueError,
    SessionNotFoundError,
    StoreUnavailableError,
)
from app.services.sessions.service import JobOutcome
from app.services.sessions.views import JobRequest

router = APIRouter(prefix="/sessions", tags=["sessions"], route_class=OrjsonRoute)


# Ids are UUIDs; a NUL could not even be looked up in PostgreSQL text.
SessionId = Annotated[str, Path(max_length=200, pattern=r"^[^\x00]+$")]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET)]

_READ = documented(SessionNotFoundError, StoreUnavailableError)
_WRITE = documented(
    SessionNotFoundError,
    StoreUnavailableError,
    InvalidHistoryError,
    IdempotencyMismatchError,
    RejectedValueError,
)
_COMPACT = documented(
    SessionNotFoundError,
    StoreUnavailableError,
    InvalidHistoryError,
    NothingToCompactError,
    IneffectiveCompactionError,
    CompactionConflictError,
    SummarizerError,
)


@router.post("", status_code=201, response_model=SessionOut, responses=_WRITE)
def create_session(body: SessionIn, tenant: Tenant, sessions: Sessions) -> SessionOut:
    """Create a session with its model, format, system prompt, tools and settings."""
    return session_out(sessions.create(tenant, new_session(body)))


@router.get("", response_model=SessionListOut, responses=_READ)
def list_sessions(
    tenant: Tenant,
    sessions: Sessions,
    offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> SessionListOut:
    """The caller's sessions, newest first."""
    rows, total = sessions.list_for_tenant(tenant, offset, limit)
    return SessionListOut(
        sessions=[session_out(r) for r in rows], total=total, offset=offset, limit=limit
    )


@router.get("/{session_id}", response_model=SessionOut, responses=_READ)
def get_session(session_id: SessionId, tenant: Tenant, sessions: Sessions) -> SessionOut:
    """One session."""
    return session_out(sessions.get(tenant, session_id))


@router.delete("/{session_id}", status_code=204, responses=_READ)
def delete_session(session_id: SessionId, tenant: Tenant, sessions: Sessions) -> Response:
    """Delete a session with its transcript and compactions."""
    sessions.delete(tenant, session_id)
    return Response(status_code=204)


@router.post("/{session_id}/messages", response_model=AppendOut, responses=_WRITE)
def append_messages(
    session_id: SessionId,
    body: AppendIn,
    tenant: Tenant,
    sessions: Sessions,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
) -> AppendOut:
    """Append messages; the same Idempotency-Key again appends nothing, same answer."""
    usage = {u.message_index: u.report() for u in body.usage}
    result = sessions.append(tenant, session_id, body.messages, usage, idempotency_key)
    return AppendOut(appended=result.appended, first_seq=result.first_seq, last_seq=result.last_seq)


@router.get("/{session_id}/transcript", response_model=TranscriptOut, responses=_READ)
def get_transcript(
    session_id: SessionId,
    tenant: Tenant,
    sessions: Sessions,
    offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=5_000)] = 1_000,
) -> TranscriptOut:
    """The original messages, exactly as received, in order."""
    messages, total = sessions.transcript(tenant, session_id, offset, limit)
    return TranscriptOut(messages=messages, total=total, offset=offset, limit=limit)


@router.get("/{session_id}/context", response_model=ContextOut, responses=_READ)
def get_context(session_id: SessionId, tenant: Tenant, sessions: Sessions) -> ContextOut:
    """What to send now: system, latest summary, kept messages, and the estimate."""
    return context_out(sessions.context(tenant, session_id))


@router.post("/{session_id}/prepare", response_model=PrepareOut, responses=_COMPACT)
async def prepare(
    session_id: SessionId,
    request: Request,
    tenant: Tenant,
    sessions: Sessions,
    body: PrepareIn | None = None,
) -> Response:
    """Before-turn hook: estimate, compact when over the threshold, return the context.
    With `dry_run: true`, what would happen, writing nothing."""
    dry_run = body is not None and body.dry_run
    result = await run_until_disconnect(
        request, lambda gone: sessions.prepare(tenant, session_id, gone, dry_run=dry_run)
    )
    return await answer_off_loop(lambda: prepare_out(result, dry_run))


_ASYNC = {
    202: {
        "model": CompactionJobOut,
        "description": "With `Prefer: respond-async`: the compaction runs as a job; `GET` "
        "the `Location` for its state, progress and record.",
        "headers": {
            "Location": {
                "description": "The job: `/sessions/{id}/jobs/{job}`.",
                "schema": {"type": "string"},
            },
            "Preference-Applied": {
                "description": "`respond-async`.",
                "schema": {"type": "string"},
            },
        },
    },
    **documented(JobsStoppedError),
}


@router.post("/{session_id}/compact", response_model=PrepareOut, responses={**_COMPACT, **_ASYNC})
async def compact_session(
    session_id: SessionId,
    body: SessionCompactIn,
    request: Request,
    tenant: Tenant,
    sessions: Sessions,
    prefer: Annotated[str | None, Header(max_length=1_000)] = None,
) -> Response:
    """Compact now (manual, or overflow after a context-too-long error); 409 if nothing.
    With `dry_run: true`, the record it would write, writing nothing. With
    `Prefer: respond-async`, 202 at once with the job's `Location` (SPEC §16); a dry run
    is answered inline."""
    if not body.dry_run and _prefers_async(prefer):
        job = await sessions.start_compaction_job(
            tenant,
            session_id,
            JobRequest(
                reason=body.reason,
                instructions=body.instructions,
                thinking=body.thinking,
                strategy=strategy_name(body.strategy),
            ),
        )
        location = f"/sessions/{session_id}/jobs/{job.id}"
        answer = job_out(JobOutcome(job, None))
        return Response(
            answer.model_dump_json(),
            status_code=202,
            media_type="application/json",
            headers={"Location": location, "Preference-Applied": "respond-async"},
        )
    result = await run_until_disconnect(
        request,
        lambda gone: sessions.compact(
            tenant,
            session_id,
            body.reason,
            body.instructions,
            body.thinking,
            gone,
            strategy=strategy_name(body.strategy),
            dry_run=body.dry_run,
        ),
    )
    return await answer_off_loop(lambda: prepare_out(result, body.dry_run))


@router.get(
    "/{session_id}/jobs/{job_id}",
    response_model=CompactionJobOut,
    responses=documented(SessionNotFoundError, StoreUnavailableError, JobNotFoundError),
)
def get_compaction_job(
    session_id: SessionId, job_id: SessionId, tenant: Tenant, sessions: Sessions
) -> CompactionJobOut:
    """An asynchronous compaction: its state (queued, running, done, failed, abandoned),
    progress (chunks folded of the total), and the record once done or the problem once
    failed. Kept for COMPACTOR_COMPACTION_JOB_RETENTION_HOURS."""
    return job_out(sessions.compaction_job(tenant, session_id, job_id))


def _prefers_async(prefer: str | None) -> bool:
    """True when a `Prefer` header (RFC 7240) asks for `respond-async`."""
    if not prefer:
        return False
    for preference in prefer.split(","):
        name = preference.split(";", 1)[0].split("=", 1)[0].strip().lower()
        if name == "respond-async":
            return True
    return False


@router.get("/{session_id}/compactions", response_model=CompactionListOut, responses=_READ)
def list_compactions(
    session_id: SessionId, tenant: Tenant, sessions: Sessions
) -> CompactionListOut:
    """Every compaction record of the session, oldest first."""
    rows = sessions.compactions(tenant, session_id)
    return CompactionListOut(compactions=[compaction_out(r) for r in rows])


@router.get("/{session_id}/cost", response_model=SessionCostOut, responses=_READ)
def get_session_cost(session_id: SessionId, tenant: Tenant, sessions: Sessions) -> SessionCostOut:
    """What the session cost (SPEC §15): tokens and dollars by kind as the upstream's usage
    reported them, for the proxied requests bound to it (`X-Compactor-Session`) and for its
    summary calls, at the model registry's prices; and what the same requests would have
    cost uncompacted. The assumption behind "uncompacted": each request after a
    compaction would also have sent the tokens that compaction folded away
    (`tokens_before - tokens_after`), and, as an unchanging prefix of a history that only
    grows, read them from the prompt cache (the cache-read price); windows are not
    checked. `saved_usd` is that minus what the session cost, summaries included."""
    return session_cost_out(session_id, sessions.ledger.cost_of(tenant, session_id))
