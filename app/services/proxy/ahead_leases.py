"""One background summary per conversation across replicas (SPEC §16, §18): a replica
takes the conversation's lease in the shared store (the `LeaseStore` port: the
database, or Redis when configured) before it starts a summary, renews it while the
summary runs and gives it up when it ends, stored or not. A replica that finds the
lease held does not start one: the holder stores its summary in the shared summary
cache, where every replica finds it. A holder that crashed renews nothing, so its lease
runs out after `seconds` and another replica may start the summary again.

The lease calls block (a database or Redis round trip): they run in worker threads.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import TypeVar

import anyio
from anyio.abc import TaskGroup

from app.services.ports import LeaseStore
from app.store.errors import StoreError

__all__ = ["AheadLeases", "Taken"]

log = logging.getLogger("compactor.proxy")

T = TypeVar("T")

# How often a turn that waits for another replica's summary asks whether it is done.
_POLL_SECONDS = 0.2


class Taken(StrEnum):
    """What asking for a conversation's lease gave."""

    TAKEN = "taken"
    # Held by another replica: its summary is on its way (compactor_prepared_summaries
    # outcome `leased_elsewhere`).
    ELSEWHERE = "leased_elsewhere"
    # The store did not answer: no summary is started (one might run elsewhere).
    UNAVAILABLE = "lease_unavailable"


class AheadLeases:
    """The leases of background summaries, `seconds` long unless renewed. Without a
    lease store (a test's bare compactor) every lease is this process's at once."""

    def __init__(self, leases: LeaseStore | None, seconds: float = 30.0) -> None:
        self._leases = leases
        self.seconds = seconds

    @staticmethod
    def name(key: tuple[str, ...]) -> str:
        """The lease name of a conversation key (fixed length: tenants are any string)."""
        digest = hashlib.sha256("\x1f".join(key).encode()).hexdigest()
        return f"prepare-ahead:{digest}"

    async def take(self, key: tuple[str, ...]) -> Taken:
        """Takes (or, held here already, extends) the lease of `key`."""
        if self._leases is None:
            return Taken.TAKEN
        leases, name = self._leases, self.name(key)
        try:
            taken = await anyio.to_thread.run_sync(leases.acquire, name, self.seconds)
        except StoreError as exc:
            log.warning("lease store unavailable", extra={"error": type(exc).__name__})
            return Taken.UNAVAILABLE
        return Taken.TAKEN if taken else Taken.ELSEWHERE

    async def holding(self, key: tuple[str, ...], work: Callable[[], Awaitable[T]]) -> T:
        """Runs `work` keeping the lease of `key` (taken already), renewed every third of
        its length, and gives it up when `work` ends, even when it is cancelled: a lease
        left behind would stop every replica for `seconds`. `work`'s exception is raised
        as it is (not in a group with the renewal's)."""
        if self._leases is None:
            return await work()
        done: list[T] = []
        failed: list[Exception] = []

        async def run(group: TaskGroup) -> None:
            try:
                done.append(await work())
            except Exception as exc:
                failed.append(exc)
            finally:
                group.cancel_scope.cancel()

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._renew, key)
                group.start_soon(run, group)
        finally:
            with anyio.CancelScope(shield=True):
                await self.release(key)
        if failed:
            raise failed[0]
        return done[0]

    async def wait_elsewhere(self, key: tuple[str, ...], seconds: float) -> bool:
        """Waits (at most `seconds`) while another replica holds the lease of `key`; True
        when it is free now (its summary stored or given up, or its holder gone)."""
        if self._leases is None:
            return True
        with anyio.move_on_after(seconds):
            while True:
                taken = await self.take(key)
                if taken is Taken.TAKEN:
                    # Only asked to know: the turn compacts with what is in the cache.
                    await self.release(key)
                    return True
                if taken is Taken.UNAVAILABLE:
                    return True
                await anyio.sleep(_POLL_SECONDS)
        return False

    async def _renew(self, key: tuple[str, ...]) -> None:
        while True:
            await anyio.sleep(self.seconds / 3)
            # Lost (it ran out and another replica took it) or not answered: the summary
            # goes on all the same; storing it twice stores the same prefix's summary.
            try:
                lost = await self.take(key) is Taken.ELSEWHERE
            except Exception as exc:  # a renewal never fails the summary it keeps
                log.warning("lease renewal failed", extra={"error": type(exc).__name__})
                continue
            if lost:
                log.warning("background summary lease lost")

    async def release(self, key: tuple[str, ...]) -> None:
        """Gives the lease of `key` up if this replica holds it."""
        if self._leases is None:
            return
        leases, name = self._leases, self.name(key)
        try:
            await anyio.to_thread.run_sync(leases.release, name)
        except StoreError as exc:
            # It runs out by itself instead.
            log.warning("lease store unavailable", extra={"error": type(exc).__name__})
