"""Forwarding proxied requests to the configured model API (SPEC §10), over one shared
httpx client. Answers are opened as streams: a caller reads them whole or chunk by chunk
as they arrive, and closing one closes the upstream connection (which cancels the
model's work)."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

import httpx

from app.engine.errors import UpstreamTimeoutError, UpstreamUnavailableError

# Headers that describe one connection, not the message (RFC 9110 §7.6.1), plus the ones
# httpx recomputes for the body it sends or decodes.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
# Answers are relayed decoded, so their encoding header goes too; and the upstream is
# offered only the encodings httpx can undo (its own accept-encoding), never the caller's.
# `date` and `server` describe the hop too, and the service's server writes its own (two
# of each would reach the caller otherwise).
_NOT_RELAYED = _HOP_BY_HOP | {"content-encoding", "date", "server"}
_NOT_FORWARDED = _HOP_BY_HOP | {"accept-encoding"}


def forwardable(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The caller's headers to send on: credentials and vendor headers unchanged, minus
    the hop-by-hop ones and accept-encoding (this hop's business, not the caller's)."""
    return [(name, value) for name, value in headers if name.lower() not in _NOT_FORWARDED]


def answer_headers(headers: httpx.Headers) -> list[tuple[str, str]]:
    """The upstream's answer headers to relay, in order, duplicates kept."""
    return [(k, v) for k, v in headers.multi_items() if k.lower() not in _NOT_RELAYED]


@dataclass
class UpstreamAnswer:
    """An upstream answer whose body is still to be read."""

    status: int
    headers: list[tuple[str, str]]
    content_type: str
    _response: httpx.Response

    @property
    def length(self) -> str | None:
        """The upstream's Content-Length when the body is relayed as sent (no encoding
        httpx undoes), so a relayed download keeps its size; None otherwise."""
        headers = self._response.headers
        encoding = headers.get("content-encoding", "identity").strip().lower()
        length = headers.get("content-length")
        return length if encoding == "identity" and length and length.isdigit() else None

    @property
    def is_event_stream(self) -> bool:
        return self.content_type.split(";", 1)[0].strip().lower() == "text/event-stream"

    async def read(self) -> bytes:
        """The whole (decoded) body; closes the connection."""
        try:
            with _reading_errors():
                return await self._response.aread()
        finally:
            await self._response.aclose()

    async def chunks(self) -> AsyncIterator[bytes]:
        """The (decoded) body as the upstream sends it; closes the connection at the end
        or when the reader stops early."""
        try:
            with _reading_errors():
                async for chunk in self._response.aiter_bytes():
                    yield chunk
        finally:
            await self._response.aclose()

    async def close(self) -> None:
        await self._response.aclose()


@contextmanager
def _reading_errors() -> Iterator[None]:
    """A failure while an answer is read, as the engine's upstream errors."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise UpstreamTimeoutError(f"the upstream stopped answering: {exc}") from exc
    except httpx.HTTPError as exc:
        raise UpstreamUnavailableError(f"the upstream answer broke off: {exc}") from exc


class UpstreamClient:
    """Sends requests to configured upstream URLs (never to one a request names)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def open(
        self,
        method: str,
        url: str,
        headers: Sequence[tuple[str, str]],
        body: bytes | AsyncIterable[bytes] | None,
        query: str = "",
        *,
        content_length: int | None = None,
    ) -> UpstreamAnswer:
        """Sends the request and returns once the answer's status and headers arrived.

        A body given as chunks is sent as they come (never held whole); with the caller's
        `content_length` it goes with that length, else chunked."""
        sent = forwardable(headers)
        if content_length is not None and not isinstance(body, bytes):
            sent.append(("content-length", str(content_length)))
        request = self._client.build_request(
            method, url + (f"?{query}" if query else ""), headers=sent, content=body
        )
        # Errors name the upstream by host only: its configured URL may carry a user and
        # password, and the caller has no business knowing the internal address anyway.
        where = request.url.host or "configured"
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise UpstreamTimeoutError(
                f"the {where} upstream did not answer in time ({type(exc).__name__})"
            ) from exc
        except httpx.HTTPError as exc:
            raise UpstreamUnavailableError(
                f"the {where} upstream is unreachable ({type(exc).__name__})"
            ) from exc
        return UpstreamAnswer(
            status=response.status_code,
            headers=answer_headers(response.headers),
            content_type=response.headers.get("content-type", ""),
            _response=response,
        )


@asynccontextmanager
async def upstream_http_client(
    timeout_seconds: float, connect_timeout_seconds: float
) -> AsyncIterator[UpstreamClient]:
    """The one client proxied requests share for the app's lifetime."""
    timeout = httpx.Timeout(
        timeout_seconds, connect=connect_timeout_seconds, pool=connect_timeout_seconds
    )
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
    # No environment proxies or netrc: where traffic goes is the service's configuration.
    async with httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False) as client:
        yield UpstreamClient(client)
