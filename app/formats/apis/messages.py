"""Anthropic Messages (`POST /v1/messages`) as the proxy speaks it, with its
`context_management` edits and compaction blocks (SPEC §11)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import orjson

from app.engine.native_edits import CompactionMark, Edit, NativeReport, OnDemandCompaction
from app.formats.apis import messages_edits as edits
from app.formats.apis import messages_reports as reports
from app.formats.apis.json_api import JsonApi
from app.formats.apis.messages_cache import with_cache_breakpoints
from app.formats.apis.protocol import Upstream, UpstreamReply, one_hour_writes, usage_report
from app.formats.apis.rewriting import rewrite_events, rewrite_json
from app.formats.apis.sse import EventCapture


class MessagesCapture(EventCapture):
    """A streamed Messages answer: content blocks rebuilt from their deltas."""

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, dict[str, Any]] = {}
        self._partial_json: dict[int, str] = {}
        self._usage: dict[str, Any] = {}

    def _is_final(self, payload: dict[str, Any]) -> bool:
        return payload.get("type") == "message_stop"

    def _event(self, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        index = payload.get("index", 0)
        if kind == "message_start":
            self._usage = dict((payload.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            self._blocks[index] = dict(payload.get("content_block") or {})
        elif kind == "content_block_delta":
            self._delta(index, payload.get("delta") or {})
        elif kind == "content_block_stop" and index in self._partial_json:
            text = self._partial_json.pop(index)
            try:
                self._blocks[index]["input"] = orjson.loads(text) if text else {}
            except orjson.JSONDecodeError:
                self._blocks[index]["input"] = {}
        elif kind == "message_delta":
            # Usage is split: input and cache counts in message_start, output here (and
            # some gateways repeat the input counts here too).
            usage = payload.get("usage") or {}
            self._usage.update({k: v for k, v in usage.items() if v is not None})

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self._blocks.setdefault(index, {})
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
        elif kind == "input_json_delta":
            self._partial_json[index] = self._partial_json.get(index, "") + delta.get(
                "partial_json", ""
            )
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta.get("signature", "")
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))

    def reply(self) -> UpstreamReply | None:
        if not self.usable or not self._blocks:
            return None
        blocks = [self._blocks[i] for i in sorted(self._blocks)]
        return UpstreamReply(
            [{"role": "assistant", "content": blocks}],
            usage_report(self._usage),
            one_hour_writes(self._usage),
        )


class MessagesContextManagement:
    """Anthropic `context_management.edits` and `compaction` blocks, on the wire."""

    def mentions(self, raw: bytes) -> bool:
        # Both markers are plain ASCII in every body the SDKs write.
        return b'"context_management"' in raw or b'"compaction"' in raw

    def carries(self, body: Mapping[str, Any]) -> bool:
        messages = body.get("messages")
        return (
            "context_management" in body
            or "compaction" in body
            or (isinstance(messages, list) and edits.has_compaction_blocks(messages))
        )

    def self_managed(self, body: Mapping[str, Any]) -> bool:
        return "context_management" in body or "compaction" in body

    def with_capabilities(self, content: bytes) -> bytes:
        return rewrite_json(content, reports.with_capabilities)

    def on_demand(self, body: Mapping[str, Any]) -> OnDemandCompaction | None:
        """The request's top-level `compaction` (compact-2026-09-04), checked."""
        return edits.parse_on_demand(body)

    def check_signed_blocks(self, messages: Sequence[Any]) -> None:
        edits.check_signed_blocks(messages)

    def ends_with_unanswered_tool_use(self, messages: Sequence[Any]) -> bool:
        return edits.ends_with_unanswered_tool_use(messages)

    def edits(self, body: Mapping[str, Any]) -> tuple[Edit, ...]:
        """The edits the request asks for, in the order they apply."""
        return edits.parse_context_management(body.get("context_management"))

    def last_compaction(self, messages: Sequence[Any]) -> CompactionMark | None:
        return edits.last_compaction(messages)

    def has_compaction_blocks(self, messages: Sequence[Any]) -> bool:
        return edits.has_compaction_blocks(messages)

    def without_compaction_blocks(self, messages: Sequence[Any]) -> list[Any]:
        return edits.without_compaction_blocks(messages)

    def after_compaction(self, messages: Sequence[Any], mark: CompactionMark) -> list[Any]:
        return edits.after_compaction(messages, mark)

    def clear_thinking(
        self, messages: Sequence[Any], keep_turns: int | None
    ) -> tuple[list[Any], int]:
        return edits.clear_thinking(messages, keep_turns)

    def count_tool_uses(self, messages: Sequence[Any]) -> int:
        return edits.count_tool_uses(messages)

    def forwarded(self, body: Mapping[str, Any], messages: Sequence[Any]) -> dict[str, Any]:
        """The request as the upstream gets it: its edits applied, the field gone."""
        out = {k: v for k, v in body.items() if k != "context_management"}
        out["messages"] = list(messages)
        return out

    def rewrite_whole(self, content: bytes, report: NativeReport) -> bytes:
        """A whole answer body with the report written in."""
        return rewrite_json(content, lambda reply: reports.report_in_reply(reply, report))

    def rewrite_stream(
        self, chunks: AsyncIterator[bytes], report: NativeReport
    ) -> AsyncIterator[bytes]:
        """An event stream with the report written in, event by event."""
        return rewrite_events(chunks, reports.StreamReportWriter(report))

    def paused_answer(self, model: str | None, report: NativeReport, streamed: bool) -> list[bytes]:
        """pause_after_compaction: the events (streamed) or the one JSON body."""
        if streamed:
            return reports.paused_stream(model, report)
        return [orjson.dumps(reports.paused_reply(model, report))]


class MessagesApi(JsonApi):
    """Anthropic Messages: history in `messages`, top-level `system`."""

    name = "messages"
    upstream = Upstream.ANTHROPIC
    format = "anthropic"
    route = "/v1/messages"
    description = "Anthropic Messages, forwarded; `messages` compacted when over the threshold."
    path = "/v1/messages"
    system_field = "system"
    budget_fields = ("max_tokens",)
    context_management = MessagesContextManagement()

    def _reply(self, body: dict[str, Any]) -> UpstreamReply | None:
        blocks = body.get("content")
        if not isinstance(blocks, list):
            return None
        usage = body.get("usage")
        return UpstreamReply(
            [{"role": "assistant", "content": blocks}], usage_report(usage), one_hour_writes(usage)
        )

    def stream_capture(self) -> MessagesCapture:
        return MessagesCapture()

    def with_cache_breakpoints(
        self, sent: Mapping[str, Any], forwarded: dict[str, Any], summary_at: int | None
    ) -> dict[str, Any]:
        return with_cache_breakpoints(sent, forwarded, summary_at)


MESSAGES = MessagesApi()
