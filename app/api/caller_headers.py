"""The caller's headers a proxied request carries on: all of them but the service's own."""

from __future__ import annotations

from starlette.requests import Request

from app.api.auth import PROXY_KEY_HEADER

MODE_HEADER = "x-compactor-mode"
SESSION_HEADER = "x-compactor-session"
# The service's own headers: read here, never forwarded (X-Compactor-Key is a secret).
OWN_HEADERS = frozenset(h.lower() for h in (PROXY_KEY_HEADER, MODE_HEADER, SESSION_HEADER))


def caller_headers(request: Request) -> list[tuple[str, str]]:
    """Credentials and vendor headers exactly as sent; the transport drops hop-by-hop ones."""
    return [(k, v) for k, v in request.headers.items() if k.lower() not in OWN_HEADERS]
