"""The app under a real uvicorn server on 127.0.0.1, for tests that drive it with the
vendors' official SDKs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from app.engine.ports import Summarizer
from app.main import create_app
from app.settings import Settings


@contextmanager
def live_server(settings: Settings, summarizer: Summarizer | None = None) -> Iterator[str]:
    """Runs the app in a thread; yields its base URL."""
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, summarizer), host="127.0.0.1", port=0, log_level="warning"
        )
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
