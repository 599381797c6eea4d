"""What one proxied request is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

import orjson

from app.engine.ports import CallerGone
from app.formats.apis.protocol import RequestEnvelope, VendorApi


class ProxyMode(StrEnum):
    TRANSPARENT = "transparent"
    NATIVE = "native"
    OFF = "off"


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


@dataclass
class ProxyCall:
    """One request to a proxied route, as received."""

    api: VendorApi
    tenant: str
    # The body exactly as received (forwarded as is unless the history is replaced).
    raw: bytes
    # The caller's headers to forward (credentials included; never logged or stored).
    headers: list[tuple[str, str]]
    mode: ProxyMode
    session_id: str | None = None
    query: str = ""
    caller_gone: CallerGone = lambda: False
    # Path parameters of the route (e.g. a model name in the path).
    path_params: Mapping[str, str] = field(default_factory=dict)
    idempotency_key: str | None = None
    # `X-Compactor-Dry-Run`: forwarded uncompacted, what compaction would have done
    # reported, nothing written (no turn, record, cache entry, memo, lease or bill).
    dry_run: bool = False

    @cached_property
    def body(self) -> dict[str, Any] | None:
        """The body as received, parsed, when it is a JSON object (else None: it is
        forwarded untouched and the upstream judges it). Parsed on first use: a
        pass-through never pays. Never modified: stages build new bodies."""
        return _json_object(self.raw)

    @cached_property
    def envelope(self) -> RequestEnvelope | None:
        """What the received body says about its history, model and tools."""
        body = self.body
        return self.api.envelope(body, self.path_params) if body is not None else None

    @property
    def bound(self) -> bool:
        """True when the request belongs to a stored session (and the proxy is on)."""
        return self.session_id is not None and self.mode is not ProxyMode.OFF
