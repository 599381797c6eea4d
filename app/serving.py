"""How `compactor serve` runs uvicorn."""

from __future__ import annotations

import asyncio
import socket

from uvicorn.protocols.http.h11_impl import H11Protocol


class NoDelayH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with TCP_NODELAY on every accepted connection.

    With several workers uvicorn binds the listening socket itself, and asyncio then never
    sets TCP_NODELAY on accepted connections: on Linux every keep-alive response after the
    first waits ~40 ms for the client's delayed ACK (uvicorn issue #3149). Setting it here
    makes 1 and N workers answer equally fast.
    """

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
