"""Metrics (Prometheus text format), request ids and one JSON log line per request."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from typing import Any, ClassVar

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REQUEST_ID_HEADER = "x-request-id"
_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:/+=-]{1,128}$")
access_log = logging.getLogger("compactor.access")

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_TOKEN_BUCKETS = (1e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1.5e5, 2e5, 5e5, 1e6)


class Metrics:
    """The service's metrics, in a registry of their own (one per app)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "compactor_http_requests",
            "HTTP requests by route template, method and status.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "compactor_http_request_duration_seconds",
            "HTTP request latency by route template and method.",
            ["route", "method"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.compactions = Counter(
            "compactor_compactions",
            "Compaction attempts by trigger and outcome.",
            ["trigger", "outcome"],
            registry=self.registry,
        )
        self.tokens_before = Histogram(
            "compactor_compaction_tokens_before",
            "Context tokens before a compaction.",
            buckets=_TOKEN_BUCKETS,
            registry=self.registry,
        )
        self.tokens_after = Histogram(
            "compactor_compaction_tokens_after",
            "Context tokens after a compaction.",
            buckets=_TOKEN_BUCKETS,
            registry=self.registry,
        )
        self.summarizer_calls = Counter(
            "compactor_summarizer_calls",
            "Summary attempts by provider and outcome (ok, truncated, failed).",
            ["provider", "outcome"],
            registry=self.registry,
        )
        self.summarizer_retries = Counter(
            "compactor_summarizer_retries",
            "Summary retries: transport retries (reason: status code or connection) and "
            "truncation retries at a lower thinking level (reason: truncated).",
            ["provider", "reason"],
            registry=self.registry,
        )
        self.summarizer_failures = Counter(
            "compactor_summarizer_failures",
            "Compactions that failed in the summarizer, by error kind.",
            ["provider", "kind"],
            registry=self.registry,
        )

    # The CompactionObserver protocol of app.services.compaction:

    def compaction_finished(
        self, trigger: str, outcome: str, tokens_before: int, tokens_after: int | None
    ) -> None:
        self.compactions.labels(trigger, outcome).inc()
        if outcome == "compacted" and tokens_after is not None:
            self.tokens_before.observe(tokens_before)
            self.tokens_after.observe(tokens_after)

    def summarizer_attempts(self, provider: str, attempts: int, ok: bool) -> None:
        retries = max(0, attempts - 1)
        if retries:
            self.summarizer_retries.labels(provider, "truncated").inc(retries)
            self.summarizer_calls.labels(provider, "truncated").inc(retries)
        self.summarizer_calls.labels(provider, "ok" if ok else "failed").inc()

    def summarizer_failed(self, provider: str, kind: str) -> None:
        self.summarizer_failures.labels(provider, kind).inc()


class RequestObservation:
    """ASGI middleware: request id in and out, metrics by route, one JSON log per request."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        presented = (
            dict(scope.get("headers", [])).get(REQUEST_ID_HEADER.encode(), b"").decode("latin-1")
        )
        request_id = presented if _SAFE_REQUEST_ID.match(presented) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500
        start = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((REQUEST_ID_HEADER.encode(), request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - start
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            method = scope.get("method", "")
            self.metrics.requests.labels(template, method, str(status)).inc()
            self.metrics.latency.labels(template, method).observe(elapsed)
            access_log.info(
                "request",
                extra={
                    "request_id": request_id,
                    "method": method,
                    "path": scope.get("path", ""),
                    "route": template,
                    "status": status,
                    "duration_ms": round(elapsed * 1000, 2),
                },
            )


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
        },
    }
