"""Error bodies in each vendor's own shape, for answers the service gives on the vendor
routes itself (the SDKs read their exception's message and type from these). Pure."""

from __future__ import annotations

from typing import Any

from app.formats.apis.protocol import Upstream


def vendor_error_body(
    upstream: Upstream, error_type: str, message: str, code: str | None = None
) -> dict[str, Any]:
    """OpenAI: `{"error": {message, type, param, code}}`; Anthropic:
    `{"type": "error", "error": {type, message}}`."""
    if upstream is Upstream.ANTHROPIC:
        return {"type": "error", "error": {"type": error_type, "message": message}}
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}
