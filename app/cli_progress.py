"""How `compactor compact` shows a model summary's progress (SPEC §16): a progress bar of
chunks folded on a terminal, one plain line per chunk otherwise (a log, a CI job), both on
stderr so the answer on stdout stays clean JSON. Told through the engine's ChunkProgress
port, as an asynchronous compaction job is."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, TextIO


class ChunkProgressDisplay:
    """A context manager whose `update(done, total)` is a `ChunkProgress`."""

    def __init__(self, stream: TextIO | None = None, *, tty: bool | None = None) -> None:
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty() if tty is None else tty
        # rich's Progress and its task (rich is imported only for a terminal).
        self._bar: Any = None
        self._task: Any = None
        self._last: tuple[int, int] | None = None

    def __enter__(self) -> ChunkProgressDisplay:
        if self._tty:
            # Imported only for a terminal: rich comes with typer, which the CLI runs on.
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            bar = Progress(
                "summarizing",
                BarColumn(),
                MofNCompleteColumn(),
                "chunks",
                TimeElapsedColumn(),
                console=Console(file=self._stream),
                transient=True,
            )
            bar.start()
            self._task = bar.add_task("summarizing", total=None)
            self._bar = bar
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def update(self, done: int, total: int) -> None:
        """`done` chunks of the history folded of `total`."""
        if self._last == (done, total):
            return
        self._last = (done, total)
        if self._bar is None:
            print(f"summarizing: {done}/{total} chunks folded", file=self._stream, flush=True)
            return
        self._bar.update(self._task, completed=done, total=total)
