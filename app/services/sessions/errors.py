"""Errors of the session use cases (mapped to statuses in the API layer)."""

from __future__ import annotations

from app.engine.errors import CompactorError


class SessionNotFoundError(CompactorError):
    """No such session for this tenant (or it was deleted)."""


class CompactionConflictError(CompactorError):
    """Another compaction of the same session committed first from the same base."""


class IdempotencyMismatchError(CompactorError):
    """An Idempotency-Key was reused with a different request body."""


class StoreUnavailableError(CompactorError):
    """The database cannot be reached; nothing was written."""


class SchemaNotAtHeadError(StoreUnavailableError):
    """The database answers but its tables are missing or older than this service."""


class RejectedValueError(CompactorError):
    """The database refused a value of the request (a NUL character, say)."""


class JobNotFoundError(CompactorError):
    """No such compaction job of this session for this tenant (or it expired)."""


class JobAbandonedError(CompactorError):
    """The process running a compaction job stopped before it finished; nothing of it
    was written."""


class JobsStoppedError(CompactorError):
    """The service is shutting down and starts no new compaction job."""
