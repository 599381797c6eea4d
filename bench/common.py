"""Timing helpers shared by the benchmarks (never used by tests)."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


def measure(fn: Callable[[], Any], repeat: int = 15, warmup: int = 2) -> float:
    """Median seconds of `fn` over `repeat` runs after `warmup` runs."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def serve_in_thread(app: Any, http: Any = "auto") -> Iterator[str]:
    """A real uvicorn server on loopback for the duration of the block; yields its URL.
    `http` is uvicorn's protocol (`app.serving.NoDelayH11Protocol` for keep-alive clients)."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", http=http)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("benchmark server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
