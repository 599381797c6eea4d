"""A loopback OTLP/HTTP trace receiver: a real HTTP server that decodes each protobuf
`ExportTraceServiceRequest` posted to /v1/traces (opentelemetry-proto) into spans."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.integration.loopback_server import LoopbackServer

_KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    error: bool
    service: str


def _value(any_value: Any) -> Any:
    field = any_value.WhichOneof("value")
    return getattr(any_value, field) if field else None


class OtlpReceiver(LoopbackServer):
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.content_types: list[str] = []
        self._lock = threading.Lock()
        super().__init__(self._handler())

    def by_name(self, name: str) -> list[ReceivedSpan]:
        with self._lock:
            return [s for s in self.spans if s.name == name]

    def _record(self, payload: bytes, content_type: str) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(payload)
        with self._lock:
            self.content_types.append(content_type)
            for resource_spans in request.resource_spans:
                resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append(
                            ReceivedSpan(
                                name=span.name,
                                kind=_KINDS.get(span.kind, str(span.kind)),
                                trace_id=span.trace_id.hex(),
                                span_id=span.span_id.hex(),
                                parent_id=span.parent_span_id.hex(),
                                attributes={a.key: _value(a.value) for a in span.attributes},
                                error=span.status.code == 2,
                                service=str(resource.get("service.name", "")),
                            )
                        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                payload = self.rfile.read(length)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver._record(payload, self.headers.get("content-type", ""))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
