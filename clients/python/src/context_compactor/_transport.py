"""Request settings both clients share: default timeout and headers."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from context_compactor._version import __version__

TimeoutTypes = float | httpx.Timeout | None

# Compactions with a model summarizer may take as long as the service's own summarizer
# deadline (120 s by default); connecting to a sidecar should take no time at all.
DEFAULT_TIMEOUT = httpx.Timeout(180.0, connect=10.0)

_USER_AGENT = f"context-compactor-client/{__version__}"


def request_headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    """Headers of one request: JSON, the bearer key when given, and call-specific ones."""
    headers = {"Accept": "application/json, application/problem+json", "User-Agent": _USER_AGENT}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    if extra:
        headers.update(extra)
    return headers
