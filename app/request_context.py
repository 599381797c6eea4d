"""The request being handled, so that every log line written while handling it names it.

The request-id middleware (`app.api.request_log.RequestObservation`) binds the id for the
whole request, streaming included; code below it (services, adapters, worker threads
started with anyio, tasks created while handling) reads it with `current_request_id()`
and never needs it passed along. `RequestIdFilter` copies it onto log records; the JSON
log configuration (`app.json_logging.json_log_config`) installs that filter.

Standard library only: any layer may import this module.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_REQUEST_ID: ContextVar[str | None] = ContextVar("compactor_request_id", default=None)


def current_request_id() -> str | None:
    """The id of the request being handled in this context, or None outside a request."""
    return _REQUEST_ID.get()


@contextmanager
def request_id_bound(request_id: str) -> Iterator[None]:
    """Binds `request_id` to the current context until the block ends."""
    token = _REQUEST_ID.set(request_id)
    try:
        yield
    finally:
        _REQUEST_ID.reset(token)


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record written while a request is handled.

    An id given explicitly (`extra={"request_id": ...}`) is kept. Installed on a handler
    (not a logger) so that records propagated from any logger, uvicorn's included, pass it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            request_id = _REQUEST_ID.get()
            if request_id is not None:
                record.request_id = request_id
        return True
