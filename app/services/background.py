"""Work that runs in the background of the process for as long as a block (the app's
lifespan): one task group, opened on entry and cancelled on exit, so nothing started in
it outlives the block and a shutdown does not wait for a summarizer to answer."""

from __future__ import annotations

from types import TracebackType
from typing import Self

import anyio
from anyio.abc import TaskGroup

__all__ = ["CancelledOnExit"]


class CancelledOnExit:
    """An async context manager owning a task group (`self._group`, None outside the
    block) whose tasks are cancelled when the block ends."""

    def __init__(self) -> None:
        self._group: TaskGroup | None = None

    async def __aenter__(self) -> Self:
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group, self._group = self._group, None
        if group is None:
            return None
        group.cancel_scope.cancel()
        return await group.__aexit__(exc_type, exc, tb)
