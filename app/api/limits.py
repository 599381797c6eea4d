"""Body size limit, enforced before any parsing (pure ASGI middleware)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.problems import problem_response

# Bounds on counts a request may carry: every value stays storable in 64-bit columns and
# every threshold computable; no real context or usage report comes near them.
MAX_TOKENS = 1_000_000_000_000
MAX_MESSAGES = 10_000_000


class BodySizeLimit:
    """Answers 413 problem+json when a body exceeds `max_bytes`, declared or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject(scope, receive, send)
            return
        # Buffer the body while counting: the endpoints read it whole anyway, and a
        # chunked upload that grows past the limit is refused without being parsed.
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._reject(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _reject(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem_response(
            413,
            "Payload too large",
            f"the request body is larger than {self.max_bytes} bytes; send a shorter history "
            "or raise COMPACTOR_MAX_BODY_BYTES",
            "payload-too-large",
        )
        await response(scope, receive, send)
