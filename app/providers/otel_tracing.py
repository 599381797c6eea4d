"""The OpenTelemetry adapter of the tracing port (`app.services.tracing.Tracer`): an SDK
tracer provider of its own (the global one is left alone), a batch processor and the
OTLP/HTTP exporter, which reads `OTEL_EXPORTER_OTLP_ENDPOINT` (and the other standard
`OTEL_EXPORTER_OTLP_*` variables) itself. W3C trace context in and out.

Imported only by the composition root, and only when tracing is on: with it off, no
OpenTelemetry module is ever loaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import AbstractContextManager, contextmanager

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from app import __version__

# The port's types, spelled out: adapters sit below the services and import nothing of
# them (the port's SpanKind is a StrEnum of these values).
AttributeValue = str | int | float | bool
Attributes = Mapping[str, AttributeValue]
_KINDS = {
    "server": trace.SpanKind.SERVER,
    "client": trace.SpanKind.CLIENT,
    "internal": trace.SpanKind.INTERNAL,
}
_PROPAGATOR = TraceContextTextMapPropagator()


class OtelSpan:
    """An OpenTelemetry span behind the port's `Span`."""

    def __init__(self, span: trace.Span) -> None:
        self.span = span

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        self.span.set_attribute(key, value)

    def update_name(self, name: str) -> None:
        self.span.update_name(name)

    def set_error(self, kind: str) -> None:
        self.span.set_attribute("error.type", kind)
        self.span.set_status(trace.Status(trace.StatusCode.ERROR))

    def end(self) -> None:
        self.span.end()


class OtelTracer:
    """Spans exported over OTLP/HTTP in batches; `force_flush` sends what is left."""

    enabled = True

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer("context-compactor", __version__)

    @contextmanager
    def span(
        self, name: str, *, kind: str = "internal", attributes: Attributes | None = None
    ) -> Iterator[OtelSpan]:
        with self._tracer.start_as_current_span(
            name, kind=_KINDS[kind], attributes=dict(attributes or {}), record_exception=False
        ) as span:
            wrapped = OtelSpan(span)
            try:
                yield wrapped
            except BaseException as exc:
                wrapped.set_error(type(exc).__name__)
                raise

    @contextmanager
    def server_span(
        self, name: str, carrier: Mapping[str, str], attributes: Attributes | None = None
    ) -> Iterator[OtelSpan]:
        parent = _PROPAGATOR.extract(carrier=dict(carrier))
        with self._tracer.start_as_current_span(
            name,
            context=parent,
            kind=trace.SpanKind.SERVER,
            attributes=dict(attributes or {}),
            record_exception=False,
        ) as span:
            yield OtelSpan(span)

    def start(
        self, name: str, *, kind: str = "internal", attributes: Attributes | None = None
    ) -> OtelSpan:
        return OtelSpan(
            self._tracer.start_span(name, kind=_KINDS[kind], attributes=dict(attributes or {}))
        )

    def current(self, span: object) -> AbstractContextManager[None]:
        assert isinstance(span, OtelSpan)
        return _used(span.span)

    def inject(self, carrier: MutableMapping[str, str]) -> None:
        _PROPAGATOR.inject(carrier)

    def force_flush(self) -> None:
        """Exports the spans still batched (the provider shuts down at process exit)."""
        self.provider.force_flush()


@contextmanager
def _used(span: trace.Span) -> Iterator[None]:
    with trace.use_span(span, end_on_exit=False):
        yield


def otlp_tracer() -> OtelTracer:
    """The tracer exporting to `OTEL_EXPORTER_OTLP_ENDPOINT` (OTLP/HTTP, protobuf)."""
    resource = Resource.create(
        {
            "service.name": os.environ.get("OTEL_SERVICE_NAME", "context-compactor"),
            "service.version": __version__,
        }
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return OtelTracer(provider)
