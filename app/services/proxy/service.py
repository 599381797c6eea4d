"""The proxy use case (SPEC §10): transform the request, forward it, recover from a
context overflow once, and hand the upstream's answer back as it came.

The seam for features that rewrite requests and answers (vendor-native context
management, SPEC §11) is `transform_request` (the body before it is forwarded) and
`transform_answer` (the answer before it goes back); everything else here is transport.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any

import anyio
import orjson

from app.engine.errors import CompactorError
from app.formats.vendor.apis import Upstream
from app.formats.vendor.overflow import is_context_overflow
from app.formats.vendor.replies import ReplyCapture, UpstreamReply, reply_from_body
from app.providers.upstream import UpstreamAnswer, UpstreamClient
from app.services.native.proxy_hook import NativePlan, NativeProxyEdits
from app.services.proxy.call import (
    NullProxyObserver,
    ProxyAnswer,
    ProxyCall,
    ProxyMode,
    ProxyObserver,
    ProxyReport,
)
from app.services.proxy.session_binding import SessionBinding
from app.services.proxy.transparent import TransparentCompactor

log = logging.getLogger("compactor.proxy")


class UpstreamNotConfiguredError(CompactorError):
    """The route's upstream has no configured URL."""


class ProxyService:
    """Forwards proxied requests to the configured upstreams."""

    def __init__(
        self,
        upstream: UpstreamClient,
        upstream_urls: Mapping[Upstream, str | None],
        compactor: TransparentCompactor,
        sessions: SessionBinding,
        observer: ProxyObserver | None = None,
        native: NativeProxyEdits | None = None,
    ) -> None:
        self.upstream = upstream
        self.upstream_urls = dict(upstream_urls)
        self.compactor = compactor
        self.sessions = sessions
        self.observer: ProxyObserver = observer or NullProxyObserver()
        self.native = native

    def base_url(self, upstream: Upstream) -> str:
        url = self.upstream_urls.get(upstream)
        if not url:
            variable = f"COMPACTOR_UPSTREAM_{upstream.value.upper()}_URL"
            raise UpstreamNotConfiguredError(
                f"no {upstream.value} upstream is configured; set {variable} to the API's "
                "base URL to use the proxy routes"
            )
        return url

    async def forward(self, call: ProxyCall) -> ProxyAnswer:
        """The upstream's answer to `call`, after compaction when it applies."""
        url = self.base_url(call.api.upstream) + call.api.path
        bound = call.session_id if call.mode is not ProxyMode.OFF else None
        report = ProxyReport(session_id=bound)
        plan = await self.native.prepare(call) if self.native is not None else None
        if plan is not None:
            call = self._natively_edited(call, plan, report)
            if plan.paused:
                return self._paused(call, plan, report)
        body = await self.transform_request(call, report)
        if body is None and plan is not None:
            body = plan.body
        if report.note:
            log.info(
                "proxy left the history as sent",
                extra={"api": call.api.name, "reason": report.note},
            )
        answer = await self._send(call, url, body)
        if answer.status >= 400 and not answer.is_event_stream:
            content = await answer.read()
            retry_body = await self._overflow_retry_body(call, answer.status, content, report)
            if retry_body is None:
                return self._finished(call, answer, report, content)
            self.observer.overflow_retry(call.api.name, "retried")
            answer = await self._send(call, url, retry_body)
        return await self.transform_answer(call, report, answer, plan)

    async def forward_plain(self, call: ProxyCall, url_path: str, method: str) -> ProxyAnswer:
        """A request forwarded untouched (e.g. GET /v1/models)."""
        url = self.base_url(call.api.upstream) + url_path
        answer = await self.upstream.open(method, url, call.headers, call.raw or None, call.query)
        report = ProxyReport()
        if answer.is_event_stream:
            return self._streamed(call, answer, report, None)
        return self._finished(call, answer, report, await answer.read())

    # -- the seam ----------------------------------------------------------------------

    async def transform_request(
        self, call: ProxyCall, report: ProxyReport
    ) -> dict[str, Any] | None:
        """The body to forward; None forwards the received bytes unchanged."""
        if call.mode is ProxyMode.OFF:
            return None
        if call.session_id is None and call.mode is ProxyMode.TRANSPARENT:
            # A history resent unchanged and known to be under its threshold goes on as
            # it came, unparsed and uncounted.
            known = self.compactor.known_under_threshold(call)
            if known is not None:
                report.tokens_before = report.tokens_after = known
                return None
            resent = self.compactor.known_compacted(call, report)
            if resent is not None:
                return resent
        if call.body is None:
            return None
        if call.session_id is not None:
            return await self.sessions.bind(call, call.body, report)
        if call.mode is ProxyMode.TRANSPARENT:
            return await self.compactor.apply(call, call.body, report)
        return None

    async def transform_answer(
        self,
        call: ProxyCall,
        report: ProxyReport,
        answer: UpstreamAnswer,
        plan: NativePlan | None = None,
    ) -> ProxyAnswer:
        """The answer to give back: relayed as it arrives when it is an event stream; a
        native step (compaction block or item, applied edits) is written into it."""
        bound = call.session_id is not None and call.mode is not ProxyMode.OFF
        native = plan if plan is not None and plan.rewrites_answer and answer.status < 400 else None
        if answer.is_event_stream:
            capture = ReplyCapture(call.api) if bound and answer.status < 400 else None
            return self._streamed(call, answer, report, capture, native)
        content = await answer.read()
        if bound and answer.status < 400:
            await self._record(call, reply_from_body(call.api, content))
        if native is not None:
            content = native.rewrite_whole(content)
        return self._finished(call, answer, report, content)

    def _natively_edited(self, call: ProxyCall, plan: NativePlan, report: ProxyReport) -> ProxyCall:
        """The call as the rest of the proxy sees it after the native step."""
        report.compacted = plan.compacted
        report.tokens_before, report.tokens_after = plan.tokens
        # A caller that manages its own context gets no transparent compaction on top.
        mode = ProxyMode.NATIVE if plan.self_managed else call.mode
        edited = replace(call, mode=mode)
        edited.body = plan.body  # the parsed body is cached on the call: this is its value
        return edited

    def _paused(self, call: ProxyCall, plan: NativePlan, report: ProxyReport) -> ProxyAnswer:
        """pause_after_compaction: the compaction block is the answer; no model is called."""
        streamed = call.body is not None and call.body.get("stream") is True
        headers, body, events = plan.paused_answer(streamed)
        self.observer.proxied(call.api.name, 200, streamed=streamed)
        if not streamed:
            return ProxyAnswer(200, headers, report, body=body)

        async def replay() -> AsyncIterator[bytes]:
            for event in events:
                yield event

        return ProxyAnswer(200, headers, report, stream=replay())

    # -- transport ---------------------------------------------------------------------

    async def _send(self, call: ProxyCall, url: str, body: dict[str, Any] | None) -> UpstreamAnswer:
        content = call.raw if body is None else orjson.dumps(body)
        return await self.upstream.open("POST", url, call.headers, content, call.query)

    async def _overflow_retry_body(
        self, call: ProxyCall, status: int, content: bytes, report: ProxyReport
    ) -> dict[str, Any] | None:
        """The body to retry with after an overflow answer, or None to give up."""
        if call.body is None or call.mode is ProxyMode.OFF or report.overflow_retried:
            return None
        if not is_context_overflow(status, content):
            return None
        report.overflow_retried = True
        try:
            if call.session_id is not None:
                body = await self.sessions.recover_overflow(call, call.body, report)
            else:
                body = await self.compactor.apply(call, call.body, report, trigger="overflow")
        except CompactorError as exc:
            log.info("overflow compaction failed", extra={"error": type(exc).__name__})
            body = None
        if body is None:
            self.observer.overflow_retry(call.api.name, "nothing_to_compact")
        return body

    def _finished(
        self, call: ProxyCall, answer: UpstreamAnswer, report: ProxyReport, content: bytes
    ) -> ProxyAnswer:
        self.observer.proxied(call.api.name, answer.status, streamed=False)
        return ProxyAnswer(answer.status, answer.headers, report, body=content)

    def _streamed(
        self,
        call: ProxyCall,
        answer: UpstreamAnswer,
        report: ProxyReport,
        capture: ReplyCapture | None,
        native: NativePlan | None = None,
    ) -> ProxyAnswer:
        self.observer.proxied(call.api.name, answer.status, streamed=True)
        stream = self._relay(call, answer, capture)
        if native is not None:
            stream = native.rewrite_stream(stream)
        return ProxyAnswer(answer.status, answer.headers, report, stream=stream)

    async def _relay(
        self, call: ProxyCall, answer: UpstreamAnswer, capture: ReplyCapture | None
    ) -> AsyncIterator[bytes]:
        """Each chunk as it arrives. A bound session's reply is recorded when the final
        event arrives, before that event is passed on: a caller that stops reading at the
        final event (the SDKs do) then hangs up without cutting the recording short."""
        recorded = capture is None
        async for chunk in answer.chunks():
            if not recorded and capture is not None and capture.feed(chunk):
                recorded = True
                await self._record(call, capture.reply())
            yield chunk
        if not recorded and capture is not None:
            await self._record(call, capture.reply())

    async def _record(self, call: ProxyCall, reply: UpstreamReply | None) -> None:
        if reply is None:
            return
        # Shielded: the reply happened upstream; a caller hanging up now must not lose it.
        with anyio.CancelScope(shield=True):
            await self.sessions.record_reply(call, reply)
