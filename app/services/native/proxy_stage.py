"""Vendor-native context management as a stage of the proxy's pipeline (SPEC §11 on
§10): the request edited before it is forwarded, the answer rewritten to report it as
the vendor would; pause_after_compaction answers without calling the model."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import anyio

from app.engine.errors import (
    IneffectiveCompactionError,
    InvalidContextManagementError,
    NothingToCompactError,
)
from app.engine.native_edits import NativeReport
from app.services.estimation import CountedHistory
from app.services.native.anthropic_edits import AnthropicEditsService
from app.services.native.ports import ContextWire, MessagesContextWire, ResponsesContextWire
from app.services.native.responses_compaction import ResponsesCompactionService
from app.services.native.session_context import with_session_history
from app.services.proxy.call import ProxyCall, ProxyMode
from app.services.proxy.pipeline import AnswerRewriter, Exchange
from app.services.proxy.report import AnswerMedia, ProxyAnswer
from app.services.proxy.turns import new_messages
from app.services.sessions.service import SessionService

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NativePlan:
    """What the native step did to one request."""

    body: dict[str, Any]
    compacted: bool
    tokens: tuple[int | None, int | None]
    rewriter: AnswerRewriter | None = None
    # pause_after_compaction: the answer, its events or one JSON body.
    paused: list[bytes] | None = None
    streamed: bool = False
    # The count of the forwarded history, and its messages (later stages reuse it).
    counted: CountedHistory | None = None
    counted_messages: Sequence[Any] = ()


class NativeHandler(Protocol):
    """One API's native context management."""

    def carries(self, call: ProxyCall) -> bool: ...

    def self_managed(self, body: Mapping[str, Any]) -> bool: ...

    async def plan(self, call: ProxyCall, body: dict[str, Any]) -> NativePlan: ...


@dataclass(frozen=True, slots=True)
class _MessagesRewriter:
    wire: MessagesContextWire
    report: NativeReport

    def rewrite_whole(self, content: bytes) -> bytes:
        return self.wire.rewrite_whole(content, self.report)

    def rewrite_stream(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        return self.wire.rewrite_stream(chunks, self.report)


@dataclass(frozen=True, slots=True)
class _ItemRewriter:
    wire: ResponsesContextWire
    item: dict[str, Any]

    def rewrite_whole(self, content: bytes) -> bytes:
        return self.wire.rewrite_whole(content, self.item)

    def rewrite_stream(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        return self.wire.rewrite_stream(chunks, self.item)


W = TypeVar("W", bound=ContextWire)


class _WireHandler(Generic[W]):
    """What both handlers share: their wire decides whether a request carries
    native context management, and whether its caller manages its own context."""

    wire: W

    def carries(self, call: ProxyCall) -> bool:
        # A byte scan first, so a request with nothing native is never parsed here.
        body = call.body if self.wire.mentions(call.raw) else None
        return body is not None and self.wire.carries(body)

    def self_managed(self, body: Mapping[str, Any]) -> bool:
        return self.wire.self_managed(body)


@dataclass(eq=False)
class MessagesHandler(_WireHandler[MessagesContextWire]):
    """Anthropic `context_management.edits` and compaction blocks."""

    service: AnthropicEditsService
    wire: MessagesContextWire

    async def plan(self, call: ProxyCall, body: dict[str, Any]) -> NativePlan:
        edited = await self.service.apply(body, call.tenant, call.caller_gone)
        report = edited.report()
        ran = edited.compaction is not None and edited.compaction.summary is not None
        streamed = body.get("stream") is True
        paused = None
        if edited.paused:
            envelope = call.envelope
            model = envelope.model if envelope is not None else None
            paused = self.wire.paused_answer(model, report, streamed)
        return NativePlan(
            body=edited.body,
            compacted=ran or bool(edited.applied_edits),
            tokens=(edited.original_input_tokens, edited.input_tokens),
            rewriter=_MessagesRewriter(self.wire, report) if report.changes_reply else None,
            paused=paused,
            streamed=streamed,
            counted=edited.counted,
            counted_messages=edited.messages,
        )


@dataclass(eq=False)
class ResponsesHandler(_WireHandler[ResponsesContextWire]):
    """Responses `context_management` compaction, compaction items and the
    `compaction_trigger` input item."""

    service: ResponsesCompactionService
    wire: ResponsesContextWire
    sessions: SessionService | None = None

    async def plan(self, call: ProxyCall, body: dict[str, Any]) -> NativePlan:
        if self.wire.compaction_trigger(body):
            return await self._triggered(call, body)
        edited = await self.service.apply(
            body, call.tenant, call.caller_gone, session_bound=call.session_id is not None
        )
        item = edited.item
        return NativePlan(
            body=edited.body,
            compacted=item is not None,
            tokens=(edited.tokens_before, edited.tokens_after),
            rewriter=_ItemRewriter(self.wire, item) if item is not None else None,
            counted=edited.counted,
            counted_messages=edited.items,
        )

    async def _triggered(self, call: ProxyCall, body: dict[str, Any]) -> NativePlan:
        """`compaction_trigger` last in `input`: compact now, answer the compaction item
        alone (no model is called). A bound session is compacted itself, and the item
        stands for its compacted context."""
        request = self.wire.without_trigger(body)
        streamed = body.get("stream") is True
        model = body.get("model") if isinstance(body.get("model"), str) else None
        session_id = call.session_id if self.sessions is not None else None
        if session_id is not None and self.sessions is not None:
            item = await self._session_item(call, session_id, self.sessions, request)
            usage = self.wire.usage(0, 0)
        else:
            window = await self.service.compact(request, call.tenant, call.caller_gone)
            item, usage = window.output[-1], window.usage
        paused = self.wire.compaction_answer(model, item, usage, streamed)
        return NativePlan(
            body=body, compacted=True, tokens=(None, None), paused=paused, streamed=streamed
        )

    async def _session_item(
        self, call: ProxyCall, session_id: str, sessions: SessionService, request: dict[str, Any]
    ) -> dict[str, Any]:
        api = self.service.api
        sent = api.checked_envelope(request).history or []
        view = await anyio.to_thread.run_sync(sessions.context, call.tenant, session_id)
        fresh = new_messages(api.format, sent) if view.context.messages else sent
        if fresh:
            await anyio.to_thread.run_sync(sessions.append, call.tenant, session_id, fresh, {})
        try:
            await sessions.compact(call.tenant, session_id, "manual", None, None, call.caller_gone)
        except (NothingToCompactError, IneffectiveCompactionError) as exc:
            logger.info("compaction_trigger on a session with nothing to compact: %s", exc)
        bound = await with_session_history(
            sessions, call.tenant, session_id, api, {**request, "input": []}
        )
        return self.service.sealed_item(bound, call.tenant, session_bound=True)


class NativeStage:
    """The pipeline's native step, for the APIs that have a handler."""

    def __init__(self, handlers: Mapping[str, NativeHandler], emulate: bool) -> None:
        self.handlers = dict(handlers)
        self.emulate = emulate

    async def run(self, exchange: Exchange) -> None:
        call = exchange.call
        handler = self.handlers.get(call.api.name)
        if handler is None or not self.emulate or exchange.mode is ProxyMode.OFF:
            return
        if not handler.carries(call) or call.body is None:
            return
        if call.dry_run:
            # A native edit is the caller's own instruction, answered in the reply (its
            # applied edits, a compaction item); forwarding the request without it would
            # be another request, and applying it is not a preview.
            raise InvalidContextManagementError(
                "X-Compactor-Dry-Run previews the service's own compaction; this request "
                "carries native context management, which cannot be previewed: send it "
                "without the header, or without its context management"
            )
        body = call.body
        plan = await handler.plan(call, body)
        report = exchange.report
        report.compacted = plan.compacted
        report.tokens_before, report.tokens_after = plan.tokens
        exchange.body = plan.body
        exchange.counted, exchange.counted_messages = plan.counted, plan.counted_messages
        if handler.self_managed(body):
            # A caller that manages its own context gets no transparent compaction on top.
            exchange.mode = ProxyMode.NATIVE
        exchange.rewriter = plan.rewriter
        if plan.paused is not None:
            media = AnswerMedia.EVENT_STREAM if plan.streamed else AnswerMedia.JSON
            exchange.immediate = _immediate(plan.paused, plan.streamed, report, media)


def _immediate(parts: list[bytes], streamed: bool, report: Any, media: AnswerMedia) -> ProxyAnswer:
    if not streamed:
        return ProxyAnswer(200, [], report, body=parts[0], media=media)

    async def replay() -> AsyncIterator[bytes]:
        for part in parts:
            yield part

    return ProxyAnswer(200, [], report, stream=replay(), media=media)
