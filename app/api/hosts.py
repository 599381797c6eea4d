"""The `Host` allow-list as pure ASGI middleware (SPEC §9): a request naming a host the
service does not answer to gets 400 problem+json before anything reads or writes.

Starlette's TrustedHostMiddleware answers plain text, ignores the address a connection
arrived at and cannot tell ports apart; this one answers like every other refusal here
(problem+json, the request id from the outer middleware) and uses `app.allowed_hosts`.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from app.allowed_hosts import SETTING, AllowedHosts, host_allowed
from app.api.problems import problem_response

# Enough of a refused Host to recognise it in the answer, not a way to echo a page.
_SHOWN_CHARS = 100


class HostAllowList:
    """Answers 400 when the `Host` header names a host not in `allowed` (see
    `app.allowed_hosts.host_allowed`); `*` in the setting turns the check off."""

    def __init__(self, app: ASGIApp, allowed: AllowedHosts) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.allowed.any_host:
            await self.app(scope, receive, send)
            return
        hosts = [value for name, value in scope.get("headers", []) if name == b"host"]
        # No Host at all is an HTTP/1.0 client (1.1 requires one): not a browser, so no
        # rebinding page; two Host headers are a request smuggling attempt.
        if not hosts or (len(hosts) == 1 and self._allowed(hosts[0], scope)):
            await self.app(scope, receive, send)
            return
        shown = b", ".join(hosts).decode("latin-1")[:_SHOWN_CHARS]
        response = problem_response(
            400,
            "Host not allowed",
            f"this service does not answer to the host {shown!r}: it answers to loopback "
            "names, the address it was reached at, and the names in "
            f"{SETTING} (comma-separated; * for any host behind a proxy that checks it)",
            "host-not-allowed",
            vendor=str(scope.get("path", "")).startswith("/v1/"),
        )
        await response(scope, receive, send)

    def _allowed(self, host: bytes, scope: Scope) -> bool:
        server = scope.get("server")
        bound = (str(server[0]), server[1]) if server and server[0] else None
        return host_allowed(self.allowed, host.decode("latin-1"), bound)
