"""Slow clients against a real uvicorn server: headers and bodies must arrive in time, and
the bodies in flight together are bounded."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

import httpx
import pytest

from app.serving import NoDelayH11Protocol
from app.settings import Settings
from tests.live_server import live_server


class QuickHeaders(NoDelayH11Protocol):
    header_timeout_seconds: ClassVar[float | None] = 2.0


@pytest.fixture
def base_url(tmp_path: Path) -> Iterator[str]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'slow.db'}",
        body_timeout_seconds=2.0,
        max_body_bytes=10_000,
        max_pending_body_bytes=15_000,
    )
    with live_server(settings, protocol=QuickHeaders) as url:
        yield url


def _connect(base_url: str) -> socket.socket:
    parts = urlsplit(base_url)
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80))
    sock.settimeout(30)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_headers_that_never_finish_are_answered_408_and_closed(base_url: str) -> None:
    with _connect(base_url) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")  # no blank line: never ends
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408")


def test_an_idle_connection_that_never_sends_is_closed(base_url: str) -> None:
    with _connect(base_url) as sock:
        assert _read_all(sock).startswith(b"HTTP/1.1 408")


def test_a_keep_alive_connection_still_serves_requests_before_the_deadline(
    base_url: str,
) -> None:
    with httpx.Client(base_url=base_url) as client:
        for _ in range(3):
            assert client.get("/healthz").status_code == 200


def test_a_body_that_stalls_is_answered_408(base_url: str) -> None:
    with _connect(base_url) as sock:
        sock.sendall(
            b"POST /estimate HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
            b"content-length: 5000\r\n\r\n" + b'{"messages": ['
        )
        answer = _read_all(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408")
    assert b"application/problem+json" in head
    assert b"x-request-id" in head.lower()
    assert b"COMPACTOR_BODY_TIMEOUT_SECONDS" in body


def test_bodies_in_flight_together_are_bounded(base_url: str) -> None:
    # One upload holds 9,000 bytes and stalls; a second needing 9,000 more is refused at
    # once with 503, and once the first is gone a new one is served.
    with _connect(base_url) as stalled:
        stalled.sendall(
            b"POST /estimate HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
            b"content-length: 9500\r\n\r\n" + b" " * 9_000
        )
        with httpx.Client(base_url=base_url) as client:
            history = {"messages": [{"role": "user", "content": "x" * 8_900}]}
            busy = client.post("/estimate", json=history)
            assert busy.status_code == 503, busy.text
            assert busy.headers["retry-after"] == "1"
            assert "COMPACTOR_MAX_PENDING_BODY_BYTES" in busy.json()["detail"]
        assert _read_all(stalled).startswith(b"HTTP/1.1 408")
    with httpx.Client(base_url=base_url) as client:
        history = {"messages": [{"role": "user", "content": "x" * 8_900}]}
        assert client.post("/estimate", json=history).status_code == 200
