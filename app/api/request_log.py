"""Request ids in and out, metrics by route and one JSON log line per request (ASGI).

The id is bound to the request's context (app.request_context) while it is handled, so
every log line written meanwhile, at any layer, carries it."""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.metrics import Metrics
from app.api.problems import problem_response
from app.request_context import request_id_bound
from app.services.tracing import NullTracer, Tracer

REQUEST_ID_HEADER = "x-request-id"
# The service's own id beside an upstream's X-Request-ID: the one its log lines carry.
OWN_REQUEST_ID_HEADER = "x-compactor-request-id"
_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:/+=-]{1,128}$")
access_log = logging.getLogger("compactor.access")
error_log = logging.getLogger("compactor.error")


class RequestObservation:
    """ASGI middleware: request id in and out, metrics by route, one JSON log per request."""

    def __init__(self, app: ASGIApp, metrics: Metrics, tracer: Tracer | None = None) -> None:
        self.app = app
        self.metrics = metrics
        self.tracer: Tracer = tracer or NullTracer()

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
        started = False
        start = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                status = message["status"]
                started = True
                headers = list(message.get("headers", []))
                # A proxied answer keeps the upstream's own id (the one its vendor knows);
                # the service's id, which its log lines carry, then goes beside it.
                if any(name.lower() == REQUEST_ID_HEADER.encode() for name, _ in headers):
                    headers.append((OWN_REQUEST_ID_HEADER.encode(), request_id.encode()))
                else:
                    headers.append((REQUEST_ID_HEADER.encode(), request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        method = scope.get("method", "")
        carrier = _trace_carrier(scope) if self.tracer.enabled else {}
        attributes = {"http.request.method": method, "compactor.request_id": request_id}
        with (
            request_id_bound(request_id),
            self.tracer.server_span(method, carrier, attributes) as span,
        ):
            try:
                await self.app(scope, receive, send_with_id)
            except Exception:
                # Any failure nobody mapped: logged with its traceback, answered as problem+json
                # with the request id (not a bare text/plain 500 or a reset connection).
                error_log.exception("unhandled error", extra={"request_id": request_id})
                if started:
                    raise  # the answer is already on its way; only closing it is left
                status = 500
                crash = problem_response(
                    500,
                    "Internal server error",
                    f"the service failed unexpectedly; report request id {request_id}",
                    "internal-error",
                )
                await crash(scope, receive, send_with_id)
            finally:
                elapsed = time.perf_counter() - start
                route = scope.get("route")
                template = getattr(route, "path", None) or "unmatched"
                span.update_name(f"{method} {template}")
                span.set_attribute("http.route", template)
                span.set_attribute("http.response.status_code", status)
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


def _trace_carrier(scope: Scope) -> dict[str, str]:
    """The caller's W3C trace context headers, to continue its trace."""
    wanted = (b"traceparent", b"tracestate")
    return {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in scope.get("headers", [])
        if name.lower() in wanted
    }
