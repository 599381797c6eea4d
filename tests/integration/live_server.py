"""The app under a real uvicorn server on 127.0.0.1 in a thread (streaming and client
disconnects need a real server: TestClient buffers and never hangs up)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI

from app.main import create_app
from app.settings import Settings


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """Runs `app`; yields its base URL."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def live_service(settings: Settings) -> Iterator[str]:
    with serving(create_app(settings)) as url:
        yield url
