"""What one proxied request is, and what the proxy did with it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any, Protocol

import orjson

from app.engine.ports import CallerGone
from app.formats.vendor.apis import ProxyApi


class ProxyMode(StrEnum):
    TRANSPARENT = "transparent"
    NATIVE = "native"
    OFF = "off"


@dataclass
class ProxyCall:
    """One request to a proxied route, as received."""

    api: ProxyApi
    tenant: str
    # The body exactly as received (forwarded as is unless the history is replaced).
    raw: bytes
    # The caller's headers to forward (credentials included; never logged or stored).
    headers: list[tuple[str, str]]
    mode: ProxyMode
    session_id: str | None = None
    query: str = ""
    caller_gone: CallerGone = lambda: False

    @cached_property
    def body(self) -> dict[str, Any] | None:
        """The body parsed, when it is a JSON object (else None: it is forwarded untouched
        and the upstream judges it). Parsed on first use: a pass-through never pays."""
        try:
            value = orjson.loads(self.raw)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    def received_body(self) -> dict[str, Any] | None:
        """The body as the caller sent it, even after a native step replaced `body` (what
        a session's transcript records: the originals, never an edited copy)."""
        try:
            value = orjson.loads(self.raw)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None


@dataclass
class ProxyReport:
    """What happened, for the X-Compactor-* headers of the answer."""

    compacted: bool = False
    tokens_before: int | None = None
    tokens_after: int | None = None
    session_id: str | None = None
    cache_hit: bool = False
    overflow_retried: bool = False
    # Why compaction was skipped or failed open, for the log (never the caller's data).
    note: str | None = None

    def headers(self) -> list[tuple[str, str]]:
        def number(value: int | None) -> str:
            return "" if value is None else str(value)

        return [
            ("x-compactor-compacted", "true" if self.compacted else "false"),
            ("x-compactor-tokens-before", number(self.tokens_before)),
            ("x-compactor-tokens-after", number(self.tokens_after)),
            ("x-compactor-session", self.session_id or ""),
        ]


@dataclass
class ProxyAnswer:
    """The upstream's answer as it goes back: whole (`body`) or as it arrives (`stream`)."""

    status: int
    headers: list[tuple[str, str]]
    report: ProxyReport
    body: bytes = b""
    stream: AsyncIterator[bytes] | None = None


class ProxyObserver(Protocol):
    """Told about proxied requests (metrics live behind this)."""

    def proxied(self, api: str, status: int, streamed: bool) -> None: ...

    def proxy_compacted(self, api: str, trigger: str) -> None: ...

    def summary_cache_lookup(self, api: str, hit: bool) -> None: ...

    def overflow_retry(self, api: str, outcome: str) -> None: ...


class NullProxyObserver:
    def proxied(self, api: str, status: int, streamed: bool) -> None:
        return None

    def proxy_compacted(self, api: str, trigger: str) -> None:
        return None

    def summary_cache_lookup(self, api: str, hit: bool) -> None:
        return None

    def overflow_retry(self, api: str, outcome: str) -> None:
        return None
