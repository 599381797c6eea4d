"""What the blocking and the asyncio client share: settings and how a call becomes a request."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import httpx

from context_compactor._endpoints import Call
from context_compactor._errors import CompactorAPIError, error_from_transport
from context_compactor._transport import TimeoutTypes, request_headers

HttpClient = TypeVar("HttpClient", httpx.Client, httpx.AsyncClient)


class ClientBase(Generic[HttpClient]):
    """Base URL, API key, timeout and connection pool of one client."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: TimeoutTypes,
        http_client: HttpClient | None,
        make_http: type[HttpClient],
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._timeout = timeout
        self._owns_http = http_client is None
        self._http: HttpClient = (
            http_client if http_client is not None else make_http(timeout=timeout)
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    def _request(self, call: Call[Any]) -> dict[str, Any]:
        """The arguments of httpx's `request` for one call."""
        return {
            "method": call.method,
            "url": self.base_url + call.path,
            "json": call.json,
            "content": call.content,
            "params": call.params,
            "headers": request_headers(self._api_key, call.headers),
            "timeout": self._timeout,
        }

    def _no_answer(self, exc: httpx.RequestError, call: Call[Any]) -> CompactorAPIError:
        return error_from_transport(exc, call.method, self.base_url + call.path)
