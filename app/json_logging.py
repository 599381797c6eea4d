"""JSON log lines for every logger, uvicorn's included, and a helper for structured events.

Each line is one JSON object: `ts` (RFC 3339, UTC, milliseconds:
`2026-12-01T22:15:03.123+00:00`), `level`, `logger`, `msg`, then `request_id` while a
request is handled (app.request_context), then the fields the caller gave.

To write a structured event from any layer::

    log_event(log, "compaction", session_id=sid, tokens_before=180_000, tokens_after=23_700)

Standard library only: any layer may import this module.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, ClassVar

# Attributes every LogRecord has (plus uvicorn's ANSI-coloured copy of the message): a
# field of the same name given to `extra=` would make logging raise.
_RECORD_ATTRIBUTES = frozenset({*vars(logging.makeLogRecord({})), "message", "asctime"})


def rfc3339_millis(created: float) -> str:
    """A POSIX time as RFC 3339 in UTC with milliseconds: `2026-12-01T22:15:03.123+00:00`."""
    return datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")


class JsonFormatter(logging.Formatter):
    """One JSON object per line; extra fields given to the logger are included."""

    _STANDARD: ClassVar[frozenset[str]] = _RECORD_ATTRIBUTES | {"color_message"}

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": rfc3339_millis(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in self._STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def log_event(
    logger: logging.Logger, event: str, /, *, level: int = logging.INFO, **fields: Any
) -> None:
    """Logs `event` as the message with `fields` as keys of the JSON line.

    A field named like a LogRecord attribute (`name`, `module`, `msg`, …) is written with a
    trailing underscore (`name_`) instead of making logging raise."""
    if not logger.isEnabledFor(level):
        return
    extra = {f"{k}_" if k in _RECORD_ATTRIBUTES else k: v for k, v in fields.items()}
    logger.log(level, event, extra=extra, stacklevel=2)


def json_log_config(level: str = "info") -> dict[str, Any]:
    """A logging dictConfig that writes every logger (uvicorn's included) as JSON lines."""
    handler = {
        "class": "logging.StreamHandler",
        "formatter": "json",
        "filters": ["request_id"],
        "stream": "ext://sys.stderr",
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "app.request_context.RequestIdFilter"}},
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {"default": handler},
        "root": {"handlers": ["default"], "level": level.upper()},
        "loggers": {
            "uvicorn": {"handlers": [], "propagate": True},
            "uvicorn.error": {"handlers": [], "propagate": True},
            "uvicorn.access": {"handlers": [], "propagate": False},
            "alembic": {"level": "WARNING"},
            # httpx logs every request URL at INFO, query string included: a caller's
            # `?api-key=` for the upstream must never reach the logs.
            "httpx": {"level": "WARNING"},
            "httpcore": {"level": "WARNING"},
        },
    }
