"""The proxy use case (SPEC §10): run the request through the pipeline's stages, forward
it, recover from a context overflow once, and hand the upstream's answer back as it came
(rewritten by a native step, the reply recorded for a bound session)."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import orjson

from app.engine.errors import CompactorError
from app.formats.apis.protocol import ReplyStream, Upstream, UpstreamReply
from app.providers.upstream import UpstreamAnswer, UpstreamClient
from app.services.compaction_log import log_overflow_retry
from app.services.cost_ledger import CostLedger
from app.services.proxy.call import ProxyCall
from app.services.proxy.decisions import RecentDecisions
from app.services.proxy.observer import NullProxyObserver, ProxyObserver
from app.services.proxy.pipeline import Exchange, ProxyStage, ReplyRecorder
from app.services.proxy.report import ProxyAnswer, ProxyReport
from app.services.tracing import NullTracer, Span, SpanKind, Tracer, usage_attributes

log = logging.getLogger("compactor.proxy")


class UpstreamNotConfiguredError(CompactorError):
    """The route's upstream has no configured URL."""

    def __init__(self, message: str, variable: str, upstream: Upstream) -> None:
        super().__init__(message)
        self.variable = variable
        self.upstream = upstream


@dataclass
class PlainCall:
    """A request forwarded untouched: a route the service does not manage (`/v1/files`,
    `/v1/embeddings`, …) or the model list. Never parsed; the body goes on as it arrives."""

    upstream: Upstream
    method: str
    # The path under the upstream's configured base URL.
    path: str
    # The caller's headers to forward (credentials included; never logged or stored).
    headers: list[tuple[str, str]]
    body: bytes | AsyncIterable[bytes] | None = None
    query: str = ""
    # The caller's declared Content-Length of a body given as chunks.
    content_length: int | None = None
    # Its name in metrics (`pass_through`, or the API whose model list it is).
    label: str = "pass_through"


class ProxyService:
    """Forwards proxied requests to the configured upstreams."""

    def __init__(
        self,
        upstream: UpstreamClient,
        upstream_urls: Mapping[Upstream, str | None],
        stages: Sequence[ProxyStage],
        observer: ProxyObserver | None = None,
        tracer: Tracer | None = None,
        decisions: RecentDecisions | None = None,
        ledger: CostLedger | None = None,
    ) -> None:
        self.upstream = upstream
        self.ledger = ledger
        self.decisions = decisions
        self.upstream_urls = dict(upstream_urls)
        self.stages = tuple(stages)
        self.observer: ProxyObserver = observer or NullProxyObserver()
        self.tracer: Tracer = tracer or NullTracer()

    def base_url(self, upstream: Upstream) -> str:
        url = self.upstream_urls.get(upstream)
        if not url:
            variable = f"COMPACTOR_UPSTREAM_{upstream.value.upper()}_URL"
            raise UpstreamNotConfiguredError(
                f"no {upstream.value} upstream is configured; set {variable} to the API's "
                "base URL to use the proxy routes",
                variable,
                upstream,
            )
        return url

    async def forward(self, call: ProxyCall) -> ProxyAnswer:
        """The upstream's answer to `call`, after the stages edited it."""
        url = self.base_url(call.api.upstream) + call.api.upstream_path(call.path_params)
        exchange = Exchange(call=call, report=ProxyReport(), mode=call.mode)
        if call.bound:
            exchange.report.session_id = call.session_id
        for stage in self.stages:
            await stage.run(exchange)
            immediate = exchange.immediate
            if immediate is not None:
                streamed = immediate.stream is not None
                self.observer.proxied(call.api.name, immediate.status, streamed=streamed)
                self._decided(call, exchange.report, immediate.status)
                return immediate
        if exchange.report.note:
            log.info(
                "proxy left the history as sent",
                extra={"api": call.api.name, "reason": exchange.report.note},
            )
        answer, span = await self._send(call, url, exchange.body)
        if answer.status >= 400 and not answer.is_event_stream:
            content = await answer.read()
            _ended(span, None)
            retry_body = await self._overflow_retry_body(exchange, answer.status, content)
            if retry_body is None:
                return self._finished(call, answer, exchange.report, content)
            self.observer.overflow_retry(call.api.name, "retried")
            answer, span = await self._send(call, url, retry_body)
        return await self._answer(exchange, answer, span)

    async def forward_plain(self, plain: PlainCall) -> ProxyAnswer:
        """A request forwarded untouched; the answer relayed as it arrives, whatever its
        type (a file download, audio, an event stream), never held whole."""
        url = self.base_url(plain.upstream) + plain.path
        attributes = {
            "http.request.method": plain.method,
            "compactor.api": plain.label,
            "gen_ai.provider.name": plain.upstream.value,
        }
        span = self.tracer.start(
            f"{plain.method} {plain.label}", kind=SpanKind.CLIENT, attributes=attributes
        )
        answer = await self._opened(
            span,
            plain.method,
            url,
            plain.headers,
            plain.body,
            plain.query,
            content_length=plain.content_length,
        )
        self.observer.proxied(plain.label, answer.status, streamed=answer.is_event_stream)
        headers = answer.headers
        if answer.length is not None:
            headers = [*headers, ("content-length", answer.length)]
        stream = self._traced(answer.chunks(), span, None)
        return ProxyAnswer(answer.status, headers, ProxyReport(), stream=stream)

    async def _answer(self, exchange: Exchange, answer: UpstreamAnswer, span: Span) -> ProxyAnswer:
        """The answer to give back: relayed as it arrives when it is an event stream; a
        native step's report written in; a bound session's reply recorded; the reply's
        usage put in the cost ledger."""
        call, report = exchange.call, exchange.report
        ok = answer.status < 400
        rewriter = exchange.rewriter if ok else None
        on_reply = self._on_reply(exchange) if ok else None
        if answer.is_event_stream:
            capture = call.api.stream_capture() if on_reply is not None else None
            stream = self._relay(answer, capture, on_reply)
            if self.tracer.enabled:
                stream = self._traced(stream, span, call.api.stream_capture())
            if rewriter is not None:
                stream = rewriter.rewrite_stream(stream)
            return self._streamed(call, answer, report, stream)
        content = await answer.read()
        wanted = ok and (self.tracer.enabled or on_reply is not None)
        reply = call.api.reply_from_body(content) if wanted else None
        if self.tracer.enabled:
            _ended(span, reply.usage if reply is not None else None)
        if on_reply is not None and reply is not None:
            await _shielded(on_reply, reply)
        if rewriter is not None:
            content = rewriter.rewrite_whole(content)
        return self._finished(call, answer, report, content)

    def _on_reply(self, exchange: Exchange) -> ReplyRecorder | None:
        """What to do with the upstream's finished reply: record it in a bound session,
        and its usage in the cost ledger; None when nothing needs it."""
        recorder, ledger = exchange.record_reply, self.ledger
        if exchange.call.dry_run:
            # A dry run writes nothing: no reply recorded, no line in the ledger.
            return None
        if ledger is None:
            return recorder
        call = exchange.call
        body = exchange.working_body
        envelope = call.api.envelope(body, call.path_params) if body is not None else None
        model = envelope.model if envelope is not None else None
        session_id = call.session_id if call.bound else None

        async def on_reply(reply: UpstreamReply) -> None:
            # The bill first: it happened upstream whatever the recording says.
            if reply.usage:
                await ledger.upstream_call(
                    call.tenant, session_id, call.api.name, model, reply.usage, reply.cache_write_1h
                )
            if recorder is not None:
                await recorder(reply)

        return on_reply

    async def _send(
        self, call: ProxyCall, url: str, body: dict[str, Any] | None
    ) -> tuple[UpstreamAnswer, Span]:
        """The upstream's answer (status and headers) and the span of the call, which
        ends when the answer does."""
        content = call.raw if body is None else orjson.dumps(body)
        attributes = self._call_attributes(call, body)
        # GenAI spans are named `{operation} {model}`.
        name = f"chat {attributes.get('gen_ai.request.model', '')}".strip()
        span = self.tracer.start(name, kind=SpanKind.CLIENT, attributes=attributes)
        answer = await self._opened(span, "POST", url, call.headers, content, call.query)
        return answer, span

    def _call_attributes(self, call: ProxyCall, body: dict[str, Any] | None) -> dict[str, Any]:
        if not self.tracer.enabled:
            return {}
        envelope = call.envelope if body is None else call.api.envelope(body)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": call.api.upstream.value,
            "compactor.api": call.api.name,
        }
        if envelope is not None and envelope.model:
            attributes["gen_ai.request.model"] = envelope.model
        return attributes

    async def _opened(
        self,
        span: Span,
        method: str,
        url: str,
        headers: list[tuple[str, str]],
        body: bytes | AsyncIterable[bytes] | None,
        query: str,
        *,
        content_length: int | None = None,
    ) -> UpstreamAnswer:
        """Opens the upstream request under `span`, its `traceparent` replacing the
        caller's (the caller's trace continues through the service's spans)."""
        if self.tracer.enabled:
            with self.tracer.current(span):
                carrier: dict[str, str] = {}
                self.tracer.inject(carrier)
            headers = [(k, v) for k, v in headers if k.lower() not in carrier] + list(
                carrier.items()
            )
        try:
            answer = await self.upstream.open(
                method, url, headers, body, query, content_length=content_length
            )
        except BaseException as exc:
            span.set_error(type(exc).__name__)
            span.end()
            raise
        span.set_attribute("http.response.status_code", answer.status)
        if answer.status >= 400:
            span.set_error(str(answer.status))
        return answer

    @staticmethod
    async def _traced(
        stream: AsyncIterator[bytes], span: Span, capture: ReplyStream | None
    ) -> AsyncIterator[bytes]:
        """`stream` passed on; its span ends with it, with the usage its events report."""
        usage = None
        try:
            async for chunk in stream:
                if capture is not None:
                    capture.feed(chunk)
                yield chunk
            reply = capture.reply() if capture is not None else None
            usage = reply.usage if reply is not None else None
        finally:
            _ended(span, usage)

    async def _overflow_retry_body(
        self, exchange: Exchange, status: int, content: bytes
    ) -> dict[str, Any] | None:
        """The body to retry with after an overflow answer, or None to give up."""
        call, report = exchange.call, exchange.report
        recover = exchange.recover_overflow
        # A dry run compacts nothing, an overflow retry included: the upstream's error is
        # the answer.
        if recover is None or report.overflow_retried or call.dry_run:
            return None
        if not call.api.is_overflow(status, content):
            return None
        report.overflow_retried = True
        started = time.perf_counter()
        outcome = "retried"
        try:
            body = await recover()
        except CompactorError as exc:
            log.info("overflow compaction failed", extra={"error": type(exc).__name__})
            body = None
            outcome = "failed"
        if body is None:
            self.observer.overflow_retry(call.api.name, "nothing_to_compact")
            outcome = "nothing_to_compact" if outcome == "retried" else outcome
        log_overflow_retry(
            call.api.name,
            outcome,
            status=status,
            tokens_before=report.tokens_before,
            tokens_after=report.tokens_after if body is not None else None,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
        return body

    def _finished(
        self, call: ProxyCall, answer: UpstreamAnswer, report: ProxyReport, content: bytes
    ) -> ProxyAnswer:
        self.observer.proxied(call.api.name, answer.status, streamed=False)
        self._decided(call, report, answer.status)
        return ProxyAnswer(answer.status, answer.headers, report, body=content)

    def _streamed(
        self,
        call: ProxyCall,
        answer: UpstreamAnswer,
        report: ProxyReport,
        stream: AsyncIterator[bytes],
    ) -> ProxyAnswer:
        self.observer.proxied(call.api.name, answer.status, streamed=True)
        self._decided(call, report, answer.status)
        return ProxyAnswer(answer.status, answer.headers, report, stream=stream)

    def _decided(self, call: ProxyCall, report: ProxyReport, status: int) -> None:
        """Keeps a stateless request's decision for the inspector (bound sessions have
        their own pages)."""
        if self.decisions is not None and not call.bound:
            self.decisions.record(call, report, status)

    @staticmethod
    async def _relay(
        answer: UpstreamAnswer,
        capture: ReplyStream | None,
        recorder: ReplyRecorder | None,
    ) -> AsyncIterator[bytes]:
        """Each chunk as it arrives. A bound session's reply is recorded when the final
        event arrives, before that event is passed on: a caller that stops reading at the
        final event (the SDKs do) then hangs up without cutting the recording short. A
        stream that ends without its final event (the model did not finish) records
        nothing."""
        recorded = capture is None
        async for chunk in answer.chunks():
            if not recorded and capture is not None and capture.feed(chunk):
                recorded = True
                reply = capture.reply()
                if reply is not None and recorder is not None:
                    await _shielded(recorder, reply)
            yield chunk
        if not recorded and capture is not None and capture.finished:
            reply = capture.reply()
            if reply is not None and recorder is not None:
                await _shielded(recorder, reply)


def _ended(span: Span, usage: Mapping[str, int] | None) -> None:
    for key, value in usage_attributes(usage).items():
        span.set_attribute(key, value)
    span.end()


async def _shielded(recorder: ReplyRecorder, reply: UpstreamReply) -> None:
    # Shielded: the reply happened upstream; a caller hanging up now must not lose it.
    with anyio.CancelScope(shield=True):
        await recorder(reply)
