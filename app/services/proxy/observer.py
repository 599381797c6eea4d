"""Told about proxied requests (metrics live behind this port)."""

from __future__ import annotations

from typing import Protocol


class ProxyObserver(Protocol):
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
