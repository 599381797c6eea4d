"""Vendor-native context management on the proxy's seam (SPEC §11 on §10): the request
edited before it is forwarded, the answer rewritten to report it as the vendor would."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson

from app.formats.vendor.apis import MESSAGES, RESPONSES
from app.formats.vendor.native_anthropic import has_compaction_blocks
from app.formats.vendor.native_anthropic_reply import (
    NativeReport,
    StreamReportWriter,
    paused_reply,
    paused_stream,
    report_in_reply,
)
from app.formats.vendor.native_responses import last_compaction_index
from app.formats.vendor.native_responses_reply import ResponsesStreamItemWriter, item_in_reply
from app.services.native.anthropic_edits import EditedMessages
from app.services.native.responses_compaction import EditedResponse
from app.services.native.services import NativeServices
from app.services.proxy.call import ProxyCall, ProxyMode


@dataclass(frozen=True, slots=True)
class NativePlan:
    """What the native step did to one request, and what the answer must carry."""

    body: dict[str, Any]
    # The caller manages its own context (it sent context_management): the proxy's
    # transparent compaction stays out of the way.
    self_managed: bool
    messages: EditedMessages | None = None
    responses: EditedResponse | None = None

    @property
    def paused(self) -> bool:
        return self.messages is not None and self.messages.paused

    @property
    def compacted(self) -> bool:
        if self.messages is not None:
            compaction = self.messages.compaction
            ran = compaction is not None and compaction.summary is not None
            return ran or bool(self.messages.applied_edits)
        return self.responses is not None and self.responses.item is not None

    @property
    def tokens(self) -> tuple[int | None, int | None]:
        if self.messages is not None:
            return self.messages.original_input_tokens, self.messages.input_tokens
        if self.responses is not None:
            return self.responses.tokens_before, self.responses.tokens_after
        return None, None

    def _anthropic_report(self) -> NativeReport:
        return self.messages.report() if self.messages is not None else NativeReport()

    def _item(self) -> dict[str, Any] | None:
        return self.responses.item if self.responses is not None else None

    @property
    def rewrites_answer(self) -> bool:
        return self._anthropic_report().changes_reply or self._item() is not None

    def rewrite_whole(self, content: bytes) -> bytes:
        """A whole answer body with the report written in."""
        try:
            reply = orjson.loads(content)
        except orjson.JSONDecodeError:
            return content
        if self.messages is not None:
            reply = report_in_reply(reply, self._anthropic_report())
        else:
            reply = item_in_reply(reply, self._item())
        try:
            return orjson.dumps(reply)
        except orjson.JSONEncodeError:
            return content  # e.g. an integer beyond 64 bits: the answer goes back as it came

    async def rewrite_stream(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """An event stream with the report written in, event by event."""
        writer: StreamReportWriter | ResponsesStreamItemWriter
        if self.messages is not None:
            writer = StreamReportWriter(self._anthropic_report())
        else:
            writer = ResponsesStreamItemWriter(self._item())
        try:
            async for chunk in chunks:
                out = writer.feed(chunk)
                if out:
                    yield out
            rest = writer.close()
            if rest:
                yield rest
        finally:
            # A caller that hangs up closes this stream: the upstream's closes with it.
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()

    def paused_answer(self, streamed: bool) -> tuple[list[tuple[str, str]], bytes, list[bytes]]:
        """pause_after_compaction: headers and the whole body (or the events)."""
        assert self.messages is not None
        model = self.body.get("model")
        report = self._anthropic_report()
        if streamed:
            headers = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
            return headers, b"", paused_stream(model, report)
        body = orjson.dumps(paused_reply(model, report))
        return [("content-type", "application/json")], body, []


class NativeProxyEdits:
    """Decides whether a proxied request carries native context management, and applies it."""

    def __init__(self, native: NativeServices, emulate: bool) -> None:
        self.native = native
        self.emulate = emulate

    def carries_native(self, call: ProxyCall) -> bool:
        if call.mode is ProxyMode.OFF or not self.emulate or call.api not in (MESSAGES, RESPONSES):
            return False
        # A byte scan first, so a request with nothing native is never parsed here (the
        # proxy forwards such bodies unparsed when it can). Both markers are plain ASCII
        # in every body the SDKs write.
        if b'"context_management"' not in call.raw and b'"compaction"' not in call.raw:
            return False
        body = call.body
        if body is None:
            return False
        if call.api is MESSAGES:
            messages = body.get("messages")
            return "context_management" in body or (
                isinstance(messages, list) and has_compaction_blocks(messages)
            )
        if call.api is RESPONSES:
            items = body.get("input")
            return "context_management" in body or (
                isinstance(items, list) and last_compaction_index(items) is not None
            )
        return False

    async def prepare(self, call: ProxyCall) -> NativePlan | None:
        """The edited request, or None when it carries nothing native (or the service is
        set to give the upstream such requests unchanged)."""
        if not self.carries_native(call):
            return None
        assert call.body is not None
        self_managed = "context_management" in call.body
        if call.api is MESSAGES:
            edited = await self.native.anthropic.apply(call.body, call.tenant, call.caller_gone)
            return NativePlan(edited.body, self_managed, messages=edited)
        response = await self.native.responses.apply(
            call.body, call.tenant, call.caller_gone, session_bound=call.session_id is not None
        )
        return NativePlan(response.body, self_managed, responses=response)
