"""Store failures as session errors: the one place a StoreError gets a use-case meaning
(unreachable, schema not migrated, value refused). A duplicate key means something
different to each use case, which catches it itself."""

from __future__ import annotations

from app.engine.errors import CompactorError
from app.services.sessions.errors import (
    RejectedValueError,
    SchemaNotAtHeadError,
    StoreUnavailableError,
)
from app.store.errors import (
    SchemaOutdatedError,
    StoreError,
    StoreUnreachableError,
    ValueRefusedError,
)


def session_error(exc: StoreError) -> CompactorError | None:
    """The session error a store failure means, or None for one the caller handles (a
    duplicate key) or a bug of ours."""
    if isinstance(exc, SchemaOutdatedError):
        return SchemaNotAtHeadError(str(exc))
    if isinstance(exc, StoreUnreachableError):
        return StoreUnavailableError(str(exc))
    if isinstance(exc, ValueRefusedError):
        return RejectedValueError(str(exc))
    return None
