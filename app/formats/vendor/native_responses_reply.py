"""Responses replies that start with the service's compaction item (SPEC §11).

Non-streaming: the item is the first `output` item. Streaming: right after
`response.created`, a `response.output_item.added` / `.done` pair announces it at output
index 0; every later event's `output_index` moves up by one, its `sequence_number` by two,
and the final response's `output` starts with the item. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def item_in_reply(reply: Any, item: Mapping[str, Any] | None) -> Any:
    """An upstream's Responses reply with `item` first in its output."""
    if item is None or not isinstance(reply, dict):
        return reply
    output = reply.get("output")
    return {**reply, "output": [dict(item), *(output if isinstance(output, list) else [])]}


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


class ResponsesStreamItemWriter:
    """Rewrites an upstream's Responses event stream to announce the compaction item."""

    def __init__(self, item: Mapping[str, Any] | None) -> None:
        self.item = dict(item) if item is not None else None
        self._buffer = b""
        self._announced = False

    def feed(self, chunk: bytes) -> bytes:
        """The rewritten events completed by `chunk`."""
        if self.item is None:
            return chunk
        self._buffer += chunk.replace(b"\r\n", b"\n")
        out: list[bytes] = []
        while b"\n\n" in self._buffer:
            frame, self._buffer = self._buffer.split(b"\n\n", 1)
            out.extend(self._rewrite(frame))
        return b"".join(out)

    def close(self) -> bytes:
        rest, self._buffer = self._buffer, b""
        return rest

    def _rewrite(self, frame: bytes) -> Iterable[bytes]:
        assert self.item is not None
        lines = [line[5:].strip() for line in frame.split(b"\n") if line.startswith(b"data:")]
        try:
            data = orjson.loads(b"\n".join(lines)) if lines else None
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
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
                _sse("response.output_item.added", added),
                _sse("response.output_item.done", done),
            ]
        out = dict(data)
        if isinstance(data.get("sequence_number"), int):
            out["sequence_number"] = data["sequence_number"] + 2
        if isinstance(data.get("output_index"), int):
            out["output_index"] = data["output_index"] + 1
        if kind in _FINAL_EVENTS and isinstance(data.get("response"), dict):
            out["response"] = item_in_reply(data["response"], self.item)
        return [_sse(kind, out)]
