"""Running work that a client disconnect cancels (and so its model call)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from starlette.requests import Request

from app.engine.errors import CallerGoneError
from app.engine.ports import CallerGone

T = TypeVar("T")
POLL_SECONDS = 0.25


async def run_until_disconnect(
    request: Request,
    work: Callable[[CallerGone], Awaitable[T]],
    *,
    body_read: asyncio.Event | None = None,
) -> T:
    """Runs `work(caller_gone)`; when the client goes away it is cancelled, nothing is
    returned, and the caller sees CallerGoneError. With `body_read`, the watch starts once
    it is set: the body is still being read (as it arrives) until then, and watching
    would take its chunks."""
    gone = asyncio.Event()
    task = asyncio.ensure_future(work(gone.is_set))
    watcher = asyncio.create_task(_watch(request, gone, task, body_read))
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if gone.is_set() and current is not None and current.cancelling() == 0:
            # The watcher cancelled the work, not the server: nobody waits for an answer.
            raise CallerGoneError("the client disconnected; the work was cancelled") from None
        raise
    finally:
        watcher.cancel()
        task.cancel()


async def _watch(
    request: Request,
    gone: asyncio.Event,
    task: asyncio.Future[T],
    body_read: asyncio.Event | None,
) -> None:
    if body_read is not None:
        await body_read.wait()
    while not task.done():
        if await request.is_disconnected():
            gone.set()
            task.cancel()
            return
        await asyncio.sleep(POLL_SECONDS)
