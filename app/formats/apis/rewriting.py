"""Answers rewritten on their way back (a native step's report written in)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import orjson


class EventRewriter(Protocol):
    def feed(self, chunk: bytes) -> bytes: ...

    def close(self) -> bytes: ...


def rewrite_json(content: bytes, edit: Callable[[Any], Any]) -> bytes:
    """A whole JSON answer passed through `edit`; as it came when it is not JSON or the
    result cannot be written (e.g. an integer beyond 64 bits)."""
    try:
        reply = orjson.loads(content)
    except orjson.JSONDecodeError:
        return content
    try:
        return orjson.dumps(edit(reply))
    except orjson.JSONEncodeError:
        return content


async def rewrite_events(
    chunks: AsyncIterator[bytes], writer: EventRewriter
) -> AsyncIterator[bytes]:
    """An event stream through `writer`, chunk by chunk."""
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
