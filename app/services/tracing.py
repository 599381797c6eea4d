"""The tracing port (SPEC §18): services open spans through `Tracer`, never through
OpenTelemetry itself. `NullTracer` (the default) does nothing and costs a method call; the
OpenTelemetry adapter (`app.providers.otel_tracing`) is built by the composition root
only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.

Span names and attributes follow the OpenTelemetry GenAI semantic conventions:
`gen_ai.operation.name`, `gen_ai.provider.name` (it replaced `gen_ai.system`),
`gen_ai.request.model`, `gen_ai.usage.input_tokens` (cache reads included),
`gen_ai.usage.output_tokens`, `gen_ai.usage.cache_read.input_tokens`,
`gen_ai.usage.cache_creation.input_tokens`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import AbstractContextManager, contextmanager
from enum import StrEnum
from typing import Protocol

from app.engine.ports import Summarizer, SummarizerInfo, SummaryRequest, SummaryResult

AttributeValue = str | int | float | bool
Attributes = Mapping[str, AttributeValue]


class SpanKind(StrEnum):
    SERVER = "server"
    CLIENT = "client"
    INTERNAL = "internal"


class Span(Protocol):
    def set_attribute(self, key: str, value: AttributeValue) -> None: ...

    def update_name(self, name: str) -> None: ...

    def set_error(self, kind: str) -> None:
        """Marks the span failed, with the error's kind (a class name, never a message)."""
        ...

    def end(self) -> None: ...


class Tracer(Protocol):
    @property
    def enabled(self) -> bool: ...

    def span(
        self, name: str, *, kind: SpanKind = SpanKind.INTERNAL, attributes: Attributes | None = None
    ) -> AbstractContextManager[Span]:
        """A span, current for the block, ended when it exits (marked failed on error)."""
        ...

    def server_span(
        self, name: str, carrier: Mapping[str, str], attributes: Attributes | None = None
    ) -> AbstractContextManager[Span]:
        """The span of a received request, continuing the caller's trace (`traceparent`
        in `carrier`) when it sent one."""
        ...

    def start(
        self, name: str, *, kind: SpanKind = SpanKind.INTERNAL, attributes: Attributes | None = None
    ) -> Span:
        """A child of the current span that outlives the block that starts it (a streamed
        answer's); the caller ends it."""
        ...

    def current(self, span: Span) -> AbstractContextManager[None]:
        """Makes `span` the current one for the block (what `inject` propagates)."""
        ...

    def inject(self, carrier: MutableMapping[str, str]) -> None:
        """Writes the current span's W3C `traceparent` (and `tracestate`) into `carrier`."""
        ...


class NullSpan:
    def set_attribute(self, key: str, value: AttributeValue) -> None:
        return None

    def update_name(self, name: str) -> None:
        return None

    def set_error(self, kind: str) -> None:
        return None

    def end(self) -> None:
        return None


NULL_SPAN = NullSpan()


class _NullBlock:
    """A reusable no-op context manager (cheaper than building a generator per span)."""

    def __enter__(self) -> NullSpan:
        return NULL_SPAN

    def __exit__(self, *exc: object) -> None:
        return None


_NULL_BLOCK = _NullBlock()


class NullTracer:
    """Tracing off: no spans, nothing propagated."""

    enabled = False

    def span(
        self, name: str, *, kind: SpanKind = SpanKind.INTERNAL, attributes: Attributes | None = None
    ) -> AbstractContextManager[Span]:
        return _NULL_BLOCK

    def server_span(
        self, name: str, carrier: Mapping[str, str], attributes: Attributes | None = None
    ) -> AbstractContextManager[Span]:
        return _NULL_BLOCK

    def start(
        self, name: str, *, kind: SpanKind = SpanKind.INTERNAL, attributes: Attributes | None = None
    ) -> Span:
        return NULL_SPAN

    def current(self, span: Span) -> AbstractContextManager[None]:
        return _nothing()

    def inject(self, carrier: MutableMapping[str, str]) -> None:
        return None


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def usage_attributes(usage: Mapping[str, int] | None) -> dict[str, AttributeValue]:
    """A usage report (`input_tokens`, `output_tokens`, `cache_read_input_tokens`,
    `cache_creation_input_tokens`, as `app.formats.apis.protocol.usage_report` gives it)
    as GenAI attributes; `gen_ai.usage.input_tokens` includes the cache reads and writes,
    as the conventions ask (Anthropic reports them apart)."""
    if not usage:
        return {}
    cache_read = usage.get("cache_read_input_tokens", 0)
    cache_write = usage.get("cache_creation_input_tokens", 0)
    attributes: dict[str, AttributeValue] = {}
    if "input_tokens" in usage:
        attributes["gen_ai.usage.input_tokens"] = usage["input_tokens"] + cache_read + cache_write
    if "output_tokens" in usage:
        attributes["gen_ai.usage.output_tokens"] = usage["output_tokens"]
    if "cache_read_input_tokens" in usage:
        attributes["gen_ai.usage.cache_read.input_tokens"] = cache_read
    if "cache_creation_input_tokens" in usage:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = cache_write
    return attributes


class TracedSummarizer:
    """A summarizer whose every call is a GenAI client span (`chat <model>`)."""

    def __init__(self, inner: Summarizer, tracer: Tracer) -> None:
        self.inner = inner
        self.tracer = tracer

    @property
    def info(self) -> SummarizerInfo:
        return self.inner.info

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        info = self.inner.info
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": info.provider,
            "gen_ai.request.model": info.model,
        }
        with self.tracer.span(
            f"chat {info.model}", kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            result = await self.inner.summarize(request)
            span.set_attribute("gen_ai.usage.input_tokens", result.usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", result.usage.output_tokens)
            return result
