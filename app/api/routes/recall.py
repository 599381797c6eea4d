"""Session endpoints that keep nothing lost and the user in control (SPEC §17): search,
revert, fork, settings changes, export and import."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import IO, Annotated

import anyio
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse

from app.api.auth import Tenant
from app.api.deps import Sessions
from app.api.mappers.recall import changes_out, search_out, settings_values
from app.api.mappers.sessions import compaction_out, context_out, session_out
from app.api.problems import documented
from app.api.routes.sessions import SessionId
from app.api.routing import OrjsonRoute
from app.api.schemas.recall import (
    JSON_LINES,
    ForkIn,
    RevertOut,
    SearchOut,
    SessionPatchIn,
    SettingsChangeListOut,
)
from app.api.schemas.sessions import SessionOut
from app.engine.search import MAX_QUERY_CHARS
from app.services.sessions.bundles import InvalidBundleError
from app.services.sessions.errors import (
    CompactionConflictError,
    RejectedValueError,
    SessionNotFoundError,
    StoreUnavailableError,
)
from app.services.sessions.revisions import CompactionNotFoundError, InvalidForkPointError
from app.services.sessions.search import MAX_SEARCH_LIMIT, InvalidSearchQueryError

router = APIRouter(prefix="/sessions", tags=["sessions"], route_class=OrjsonRoute)

_READ = documented(SessionNotFoundError, StoreUnavailableError)
# Spooled in memory up to this size, then to a temporary file.
_SPOOL_BYTES = 1024 * 1024


@router.get(
    "/{session_id}/search",
    response_model=SearchOut,
    responses=documented(SessionNotFoundError, StoreUnavailableError, InvalidSearchQueryError),
)
def search_transcript(
    session_id: SessionId,
    tenant: Tenant,
    sessions: Sessions,
    q: Annotated[
        str,
        Query(
            min_length=1,
            max_length=MAX_QUERY_CHARS,
            description='Words (all must match), "a phrase", prefix*, -excluded, a OR b.',
        ),
    ],
    limit: Annotated[int, Query(ge=1, le=MAX_SEARCH_LIMIT)] = 10,
    folded_only: Annotated[bool, Query(description="Only entries compaction folded away.")] = False,
) -> SearchOut:
    """Full-text search of the transcript, folded entries included, best first."""
    return search_out(q, sessions.search(tenant, session_id, q, limit, folded_only))


@router.post(
    "/{session_id}/compactions/{compaction_id}/revert",
    response_model=RevertOut,
    responses=documented(
        SessionNotFoundError,
        StoreUnavailableError,
        CompactionNotFoundError,
        CompactionConflictError,
    ),
)
def revert_compaction(
    session_id: SessionId,
    compaction_id: SessionId,
    tenant: Tenant,
    sessions: Sessions,
) -> RevertOut:
    """Make the context the one before this compaction again: a new `revert` record."""
    result = sessions.revert(tenant, session_id, compaction_id)
    return RevertOut(compaction=compaction_out(result.record), context=context_out(result.view))


@router.post(
    "/{session_id}/fork",
    status_code=201,
    response_model=SessionOut,
    responses=documented(SessionNotFoundError, StoreUnavailableError, InvalidForkPointError),
)
def fork_session(
    session_id: SessionId, body: ForkIn, tenant: Tenant, sessions: Sessions
) -> SessionOut:
    """A new session from entries 0..at_seq of this one, sharing nothing mutable."""
    return session_out(sessions.fork(tenant, session_id, body.at_seq))


@router.patch(
    "/{session_id}",
    response_model=SessionOut,
    responses=documented(SessionNotFoundError, StoreUnavailableError, RejectedValueError),
)
def update_session(
    session_id: SessionId, body: SessionPatchIn, tenant: Tenant, sessions: Sessions
) -> SessionOut:
    """Change model, window, reserve, trigger, keep-recent, strategy or thinking; the
    next `prepare` uses them, and the change is recorded (who, when)."""
    values = settings_values(body)
    return session_out(sessions.update_settings(tenant, session_id, values, tenant, "api"))


@router.get("/{session_id}/changes", response_model=SettingsChangeListOut, responses=_READ)
def list_settings_changes(
    session_id: SessionId, tenant: Tenant, sessions: Sessions
) -> SettingsChangeListOut:
    """Every recorded settings change, oldest first."""
    return changes_out(sessions.settings_changes(tenant, session_id))


@router.get(
    "/{session_id}/export",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "JSON Lines: the session, each entry, each compaction record, "
            "each settings change, and a trailer with the counts and a SHA-256.",
            "content": {JSON_LINES: {"schema": {"type": "string", "format": "binary"}}},
        },
        **_READ,
    },
)
def export_session(session_id: SessionId, tenant: Tenant, sessions: Sessions) -> Response:
    """Stream the session as one JSON Lines bundle (read a page at a time)."""
    lines = sessions.export(tenant, session_id)
    filename = f"session-{session_id}.jsonl"
    return StreamingResponse(
        lines,
        media_type=JSON_LINES,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.post(
    "/import",
    status_code=201,
    response_model=SessionOut,
    responses=documented(StoreUnavailableError, InvalidBundleError, RejectedValueError),
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "A bundle from GET /sessions/{id}/export, as it was written.",
            "content": {JSON_LINES: {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
async def import_session(request: Request, tenant: Tenant, sessions: Sessions) -> SessionOut:
    """Restore a session from an export bundle: a new session, transcript byte-identical;
    a malformed or truncated bundle is refused (422) and writes nothing."""
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as spool:
        async for chunk in request.stream():
            spool.write(chunk)
        spool.seek(0)
        view = await anyio.to_thread.run_sync(lambda: sessions.import_bundle(tenant, _lines(spool)))
    return session_out(view)


def _lines(spool: IO[bytes]) -> Iterator[bytes]:
    yield from spool
