"""JSON log lines for every logger, uvicorn's included."""

from __future__ import annotations

import json
import logging
from typing import Any, ClassVar


class JsonFormatter(logging.Formatter):
    """One JSON object per line; extra fields given to the logger are included."""

    # Standard record attributes, plus uvicorn's ANSI-coloured duplicate of the message.
    _STANDARD: ClassVar[frozenset[str]] = frozenset(
        {*vars(logging.makeLogRecord({})), "color_message"}
    )

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in self._STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def json_log_config(level: str = "info") -> dict[str, Any]:
    """A logging dictConfig that writes every logger (uvicorn's included) as JSON lines."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
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
