"""Responses replies that start with the service's compaction item (SPEC §11).

Non-streaming: the item is the first `output` item. Streaming: right after
`response.created`, a `response.output_item.added` / `.done` pair announces it at output
index 0; every later event's `output_index` moves up by one, its `sequence_number` by two,
and the final response's `output` starts with the item. Pure: no I/O.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from app.formats.apis.sse import FrameRewriter, frame_json, sse

_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def item_in_reply(reply: Any, item: Mapping[str, Any] | None) -> Any:
    """An upstream's Responses reply with `item` first in its output."""
    if item is None or not isinstance(reply, dict):
        return reply
    output = reply.get("output")
    return {**reply, "output": [dict(item), *(output if isinstance(output, list) else [])]}


class ResponsesStreamItemWriter(FrameRewriter):
    """Rewrites an upstream's Responses event stream to announce the compaction item."""

    def __init__(self, item: Mapping[str, Any] | None) -> None:
        super().__init__(active=item is not None)
        self.item = dict(item) if item is not None else None
        self._announced = False

    def _rewrite(self, frame: bytes) -> Iterable[bytes]:
        assert self.item is not None
        data = frame_json(frame)
        if data is None:
            return [frame + b"\n\n"]
        kind = data["type"]
        if not self._announced:
            if kind != "response.created":
                return [frame + b"\n\n"]
            self._announced = True
            number = int(data.get("sequence_number") or 0)
            added = {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": self.item,
                "sequence_number": number + 1,
            }
            done = {**added, "type": "response.output_item.done", "sequence_number": number + 2}
            return [
                frame + b"\n\n",
                sse("response.output_item.added", added),
                sse("response.output_item.done", done),
            ]
        out = dict(data)
        if isinstance(data.get("sequence_number"), int):
            out["sequence_number"] = data["sequence_number"] + 2
        if isinstance(data.get("output_index"), int):
            out["output_index"] = data["output_index"] + 1
        if kind in _FINAL_EVENTS and isinstance(data.get("response"), dict):
            out["response"] = item_in_reply(data["response"], self.item)
        return [sse(kind, out)]


def compaction_response(
    model: Any, item: Mapping[str, Any], usage: Mapping[str, Any]
) -> dict[str, Any]:
    """A `compaction_trigger` answered: a completed Response whose output is the item."""
    return {
        "id": f"resp_{secrets.token_hex(16)}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model if isinstance(model, str) else "",
        "output": [dict(item)],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "usage": dict(usage),
    }


def compaction_answer(
    model: Any, item: Mapping[str, Any], usage: Mapping[str, Any], streamed: bool
) -> list[bytes]:
    """The trigger's answer: one JSON body, or the events of a stream that carries it."""
    response = compaction_response(model, item, usage)
    if not streamed:
        return [orjson.dumps(response)]
    created = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": created},
        {"type": "response.in_progress", "response": created},
        {"type": "response.output_item.added", "output_index": 0, "item": dict(item)},
        {"type": "response.output_item.done", "output_index": 0, "item": dict(item)},
        {"type": "response.completed", "response": response},
    ]
    return [sse(e["type"], {**e, "sequence_number": i}) for i, e in enumerate(events)]
