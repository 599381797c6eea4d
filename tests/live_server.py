"""The app under a real uvicorn server on 127.0.0.1 in a thread: real sockets and real
concurrency (sync endpoints run in uvicorn's thread pool), streaming and client
disconnects (TestClient buffers and never hangs up), and the HTTP protocol class that
`compactor serve` uses."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI

from app.main import create_app
from app.serving import NoDelayH11Protocol
from app.settings import Settings

# Generous: a loaded 2-core machine can take tens of seconds to start an app.
START_TIMEOUT_SECONDS = 60


@contextmanager
def serving(app: FastAPI, protocol: type[NoDelayH11Protocol] | None = None) -> Iterator[str]:
    """Runs `app` (its lifespan included) on a free loopback port; yields its base URL and
    stops the server on exit."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="on",
        http=protocol or NoDelayH11Protocol,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextmanager
def live_server(
    settings: Settings, protocol: type[NoDelayH11Protocol] | None = None, **app_args: Any
) -> Iterator[str]:
    """Serves `create_app(settings, **app_args)`; yields its base URL."""
    with serving(create_app(settings, **app_args), protocol) as url:
        yield url
