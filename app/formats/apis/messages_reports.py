"""Anthropic replies that report a native context-management step (SPEC §11).

A compaction puts a `compaction` block first in the reply's content (streaming: a block at
index 0 filled by one `compaction_delta`, the upstream's blocks shifted by one), its usage
becomes a `compaction` entry of `usage.iterations` ahead of the model's own `message`
entry, and `context_management.applied_edits` lists the clearing edits. Shapes are the SDK's
`BetaMessage`, `BetaCompactionBlock`, `BetaCompactionContentBlockDelta`,
`BetaCompactionIterationUsage`, `BetaMessageIterationUsage`. Pure: no I/O.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from app.engine.native_edits import AppliedEdit, NativeReport
from app.formats.apis.messages_edits import EDIT_TYPES, compaction_block
from app.formats.apis.sse import FrameRewriter, frame_json, sse


def compaction_iteration(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """The summarizer's usage as a `compaction` iteration."""
    return {
        "type": "compaction",
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def message_iteration(usage: Mapping[str, Any], output_tokens: int | None = None) -> dict[str, Any]:
    """The model call's usage as a `message` iteration."""
    return {
        "type": "message",
        "input_tokens": int(usage.get("input_tokens") or 0),
        "output_tokens": int(
            output_tokens if output_tokens is not None else usage.get("output_tokens") or 0
        ),
        "cache_creation_input_tokens": int(usage.get("cache_creation_input_tokens") or 0),
        "cache_read_input_tokens": int(usage.get("cache_read_input_tokens") or 0),
    }


def applied_edit(edit: AppliedEdit) -> dict[str, Any]:
    """One `applied_edits` entry (BetaClearToolUses20250919EditResponse, …)."""
    out: dict[str, Any] = {"type": edit.type}
    if edit.cleared_tool_uses is not None:
        out["cleared_tool_uses"] = edit.cleared_tool_uses
    if edit.cleared_thinking_turns is not None:
        out["cleared_thinking_turns"] = edit.cleared_thinking_turns
    out["cleared_input_tokens"] = edit.cleared_input_tokens
    return out


@dataclass(frozen=True, slots=True)
class _Rendered:
    """A report in wire shape: the compaction block, its usage, `context_management`."""

    block: dict[str, Any] | None
    compaction_usage: tuple[int, int]
    context_management: dict[str, Any] | None

    @property
    def changes_reply(self) -> bool:
        return self.block is not None or self.context_management is not None


def _render(report: NativeReport) -> _Rendered:
    compaction = report.compaction
    block = None
    usage = (0, 0)
    if compaction is not None:
        block = compaction_block(compaction.summary, compaction.state, compaction.signature)
        usage = (compaction.input_tokens, compaction.output_tokens)
    context_management = None
    if report.has_edits:
        context_management = {"applied_edits": [applied_edit(e) for e in report.applied_edits]}
    return _Rendered(block, usage, context_management)


def report_in_reply(reply: Any, native: NativeReport) -> Any:
    """An upstream's (non-streaming) Messages reply with the report written into it."""
    report = _render(native)
    if not isinstance(reply, dict) or not report.changes_reply:
        return reply
    out = dict(reply)
    if report.block is not None:
        content = reply.get("content")
        out["content"] = [report.block, *(content if isinstance(content, list) else [])]
        usage = _object(reply.get("usage"))
        out["usage"] = {
            **usage,
            "iterations": [
                compaction_iteration(*report.compaction_usage),
                message_iteration(usage),
            ],
        }
    if report.context_management is not None:
        out["context_management"] = report.context_management
    return out


def paused_reply(model: Any, native: NativeReport) -> dict[str, Any]:
    """pause_after_compaction: the compaction block alone, no model called."""
    report = _render(native)
    assert report.block is not None
    return {
        "id": f"msg_{secrets.token_hex(12)}",
        "type": "message",
        "role": "assistant",
        "model": model if isinstance(model, str) else "",
        "content": [report.block],
        "stop_reason": "compaction",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "iterations": [compaction_iteration(*report.compaction_usage)],
        },
        "context_management": report.context_management,
    }


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def compaction_block_events(block: Mapping[str, Any], index: int = 0) -> list[bytes]:
    """A compaction block streamed: start (empty), one compaction_delta, stop."""
    empty = {**block, "content": None, "encrypted_content": None}
    delta = {
        "type": "compaction_delta",
        "content": block.get("content"),
        "encrypted_content": block.get("encrypted_content"),
    }
    start = {"type": "content_block_start", "index": index, "content_block": empty}
    return [
        sse("content_block_start", start),
        sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
        sse("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def paused_stream(model: Any, native: NativeReport) -> list[bytes]:
    """pause_after_compaction, streamed."""
    report = _render(native)
    message = paused_reply(model, native)
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {k: v for k, v in message["usage"].items() if k != "iterations"}
    start.pop("context_management", None)
    delta: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": "compaction", "stop_sequence": None},
        "usage": {"output_tokens": 0, "iterations": message["usage"]["iterations"]},
    }
    if report.context_management is not None:
        delta["context_management"] = report.context_management
    return [
        sse("message_start", {"type": "message_start", "message": start}),
        *compaction_block_events(message["content"][0]),
        sse("message_delta", delta),
        sse("message_stop", {"type": "message_stop"}),
    ]


class StreamReportWriter(FrameRewriter):
    """Rewrites an upstream's Messages event stream to carry the report."""

    def __init__(self, native: NativeReport) -> None:
        report = _render(native)
        super().__init__(active=report.changes_reply)
        self.report = report
        self._shift = 1 if report.block is not None else 0
        self._start_usage: Mapping[str, Any] = {}

    def _rewrite(self, frame: bytes) -> Iterable[bytes]:
        data = frame_json(frame)
        if data is None:
            return [frame + b"\n\n"]
        kind = data["type"]
        if kind == "message_start":
            self._start_usage = _object(_object(data.get("message")).get("usage"))
            events = [frame + b"\n\n"]
            if self.report.block is not None:
                events.extend(compaction_block_events(self.report.block))
            return events
        if kind.startswith("content_block_") and isinstance(data.get("index"), int):
            return [sse(kind, {**data, "index": data["index"] + self._shift})]
        if kind == "message_delta":
            return [sse(kind, self._message_delta(data))]
        return [frame + b"\n\n"]

    def _message_delta(self, data: dict[str, Any]) -> dict[str, Any]:
        out = dict(data)
        if self.report.context_management is not None:
            out["context_management"] = self.report.context_management
        if self.report.block is not None:
            usage = _object(data.get("usage"))
            start = {**self._start_usage, **{k: v for k, v in usage.items() if v is not None}}
            out["usage"] = {
                **usage,
                "iterations": [
                    compaction_iteration(*self.report.compaction_usage),
                    message_iteration(start, usage.get("output_tokens")),
                ],
            }
        return out


def with_capabilities(model: Any) -> Any:
    """A BetaModelInfo with the context management the service emulates marked supported
    (BetaContextManagementCapability, BetaCompactionCapability): the upstream's other
    capabilities stay as it said them."""
    if not isinstance(model, dict) or model.get("type") != "model":
        return model
    capabilities = _object(model.get("capabilities"))
    supported = {"supported": True}
    context = {
        **_object(capabilities.get("context_management")),
        "supported": True,
        **{edit: supported for edit in EDIT_TYPES},
    }
    compaction = {
        **_object(capabilities.get("compaction")),
        "supported": True,
        "summarize": supported,
    }
    return {
        **model,
        "capabilities": {**capabilities, "context_management": context, "compaction": compaction},
    }
