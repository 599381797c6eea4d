"""Answers that carry an upstream's status, headers and body through unchanged."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import anyio
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send


def _raw(headers: Sequence[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]


def whole_answer(status: int, headers: Sequence[tuple[str, str]], body: bytes) -> Response:
    """An answer read whole; headers in order, duplicates (set-cookie) kept."""
    response = Response(content=body, status_code=status)
    response.raw_headers = [*_raw(headers), (b"content-length", str(len(body)).encode())]
    return response


class RelayedStream(StreamingResponse):
    """Chunks sent on as they arrive. A caller that hangs up stops the relay at once (the
    upstream connection closes with it), whatever the server's ASGI version."""

    def __init__(
        self, chunks: AsyncIterator[bytes], status: int, headers: Sequence[tuple[str, str]]
    ) -> None:
        super().__init__(chunks, status_code=status)
        self.raw_headers = _raw(headers)
        self._chunks = chunks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:

            async def relay() -> None:
                try:
                    await self.stream_response(send)
                except OSError:
                    pass  # the caller is gone; the disconnect listener ends the group
                finally:
                    group.cancel_scope.cancel()

            group.start_soon(relay)
            await self.listen_for_disconnect(receive)
            group.cancel_scope.cancel()
        aclose = getattr(self._chunks, "aclose", None)
        if aclose is not None:
            await aclose()
