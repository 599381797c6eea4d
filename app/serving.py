"""How `compactor serve` runs uvicorn."""

from __future__ import annotations

import asyncio
import socket
from typing import ClassVar

from uvicorn.protocols.http.h11_impl import H11Protocol

_REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\nconnection: close\r\n"
    b"content-length: 37\r\n\r\nthe request headers did not arrive.\r\n"
)


class NoDelayH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with TCP_NODELAY and a deadline for request headers.

    With several workers uvicorn binds the listening socket itself, and asyncio then never
    sets TCP_NODELAY on accepted connections: on Linux every keep-alive response after the
    first waits ~40 ms for the client's delayed ACK (uvicorn issue #3149). Setting it here
    makes 1 and N workers answer equally fast.

    uvicorn never times out a connection that is sending its headers (its keep-alive timer
    stops at the first byte), so a client trickling bytes holds a connection forever: here
    the headers of each request must be complete within `header_timeout_seconds`
    (COMPACTOR_HEADER_TIMEOUT_SECONDS), else the connection is answered 408 and closed.
    """

    # None: read from the settings once per process, at the first connection.
    header_timeout_seconds: ClassVar[float | None] = None
    _header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
        self._arm_header_deadline()

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a request's headers are complete
            self._disarm_header_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        idle = self.cycle is None or self.cycle.response_complete
        if idle and not self.transport.is_closing():
            self._arm_header_deadline()  # the next request on this keep-alive connection

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        super().connection_lost(exc)

    def _arm_header_deadline(self) -> None:
        self._disarm_header_deadline()
        self._header_deadline = self.loop.call_later(
            _header_timeout(type(self)), self._headers_too_slow, self.cycle
        )

    def _disarm_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_too_slow(self, cycle: object) -> None:
        self._header_deadline = None
        if self.cycle is cycle and not self.transport.is_closing():
            self.transport.write(_REQUEST_TIMEOUT)
            self.transport.close()


def _header_timeout(protocol: type[NoDelayH11Protocol]) -> float:
    if protocol.header_timeout_seconds is None:
        from app.settings import Settings

        protocol.header_timeout_seconds = Settings().header_timeout_seconds
    return protocol.header_timeout_seconds
