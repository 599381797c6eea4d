"""The app under a real uvicorn server on 127.0.0.1 in a thread (real sockets, real
concurrency: sync endpoints run in uvicorn's thread pool)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from app.main import create_app
from app.serving import NoDelayH11Protocol
from app.settings import Settings


@contextmanager
def live_server(
    settings: Settings, protocol: type[NoDelayH11Protocol] | None = None, **app_args: Any
) -> Iterator[str]:
    """Serves `create_app(settings)`; yields its base URL; stops it on exit."""
    config = uvicorn.Config(
        create_app(settings, **app_args),
        host="127.0.0.1",
        port=0,
        log_level="warning",
        http=protocol or NoDelayH11Protocol,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
