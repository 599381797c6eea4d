"""Request limits enforced before any parsing: body size, body read time, the bytes all
bodies in flight may hold together (pure ASGI middleware), and JSON nesting depth."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.problems import problem_response

# Bounds on counts a request may carry: every value stays storable in 64-bit columns and
# every threshold computable; no real context or usage report comes near them.
MAX_TOKENS = 1_000_000_000_000
MAX_MESSAGES = 10_000_000
# Pagination offsets: far beyond any real count, far below the 2**63 databases refuse.
MAX_OFFSET = 1_000_000_000_000
# JSON bodies nested deeper are refused: an answer wraps a stored value in a few more
# levels and the serializer stops at 255, so a deeper value could be stored but never
# read back. Real tool schemas and content blocks stay far below this.
MAX_JSON_DEPTH = 128


def json_too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when `value` nests objects/arrays more than `limit` levels (iterative walk)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


class StreamedBodyRefused(Exception):
    """A body passed on as it arrives broke a limit mid-way; `BodySizeLimit` answers."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class PendingBodies:
    """The bytes of request bodies a process holds at once, across all requests."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.held = 0

    def try_take(self, size: int) -> bool:
        if self.held + size > self.max_bytes:
            return False
        self.held += size
        return True

    def give_back(self, size: int) -> None:
        self.held -= size


class BodySizeLimit:
    """Answers 413 problem+json when a body exceeds `max_bytes`, declared or streamed; 408
    when it does not arrive within `timeout_seconds`; 503 while the bodies of requests in
    flight already hold `max_pending_bytes` (a stalled or slow upload cannot pin memory).

    A request `streamed(scope)` picks (the pass-through routes) is not held: its body goes
    to the endpoint chunk by chunk as it arrives, under the same size and time limits
    (counted as it passes; it holds one chunk at a time, so no pending bytes)."""

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        timeout_seconds: float = 60.0,
        max_pending_bytes: int | None = None,
        streamed: Callable[[Scope], bool] | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_seconds = timeout_seconds
        self.pending = PendingBodies(max_pending_bytes or 8 * max_bytes)
        self.streamed = streamed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject(scope, receive, send)
            return
        if self.streamed is not None and self.streamed(scope):
            await self._pass_on(scope, receive, send)
            return
        held = 0
        try:
            # Buffer the body while counting: the endpoints read it whole anyway, and a
            # chunked upload that grows past the limit is refused without being parsed.
            chunks: list[bytes] = []
            with anyio.move_on_after(self.timeout_seconds) as deadline:
                more = True
                while more:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    chunk = message.get("body", b"")
                    if held + len(chunk) > self.max_bytes:
                        await self._reject(scope, receive, send)
                        return
                    if not self.pending.try_take(len(chunk)):
                        await self._busy(scope, receive, send)
                        return
                    held += len(chunk)
                    chunks.append(chunk)
                    more = message.get("more_body", False)
            if deadline.cancelled_caught:
                await self._too_slow(scope, receive, send)
                return
            body = b"".join(chunks)
            del chunks
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
        finally:
            self.pending.give_back(held)

    async def _pass_on(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app reads the body as it arrives; a limit broken mid-way stops it there and
        is answered (when nothing was answered yet)."""
        seen = 0
        deadline = anyio.current_time() + self.timeout_seconds
        body_done = False
        started = False

        async def counted() -> Message:
            nonlocal seen, body_done
            if body_done:  # after the body: only the disconnect is left to wait for
                return await receive()
            with anyio.move_on_after(deadline - anyio.current_time()) as waited:
                message = await receive()
            if waited.cancelled_caught:
                raise StreamedBodyRefused(408)
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise StreamedBodyRefused(413)
                body_done = not message.get("more_body", False)
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except StreamedBodyRefused as refused:
            if started:
                raise
            if refused.status == 413:
                await self._reject(scope, receive, send, close=True)
            else:
                await self._too_slow(scope, receive, send)

    async def _reject(
        self, scope: Scope, receive: Receive, send: Send, *, close: bool = False
    ) -> None:
        detail = (
            f"the request body is larger than {self.max_bytes} bytes; send a shorter history "
            "or raise COMPACTOR_MAX_BODY_BYTES"
        )
        # With `close`, the rest of the body is still on its way: end the connection.
        response = _refusal(413, "Payload too large", detail, "payload-too-large", close)
        await response(scope, receive, send)

    async def _too_slow(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = (
            f"the request body did not arrive within {self.timeout_seconds:g} s "
            "(COMPACTOR_BODY_TIMEOUT_SECONDS); send it faster or in a smaller request"
        )
        await _refusal(408, "Request timeout", detail, "request-timeout")(scope, receive, send)

    async def _busy(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = (
            "the request bodies being received already hold "
            f"{self.pending.max_bytes} bytes (COMPACTOR_MAX_PENDING_BODY_BYTES); retry shortly"
        )
        response = _refusal(503, "Too many uploads at once", detail, "uploads-busy")
        response.headers["retry-after"] = "1"
        await response(scope, receive, send)


def _refusal(status: int, title: str, detail: str, kind: str, close: bool = True) -> Response:
    """A body refused before it was read whole: the connection ends with the answer
    unless the caller says the body is done."""
    response = problem_response(status, title, detail, kind)
    if close:
        response.headers["connection"] = "close"
    return response
