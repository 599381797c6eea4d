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
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from enum import StrEnum

import anyio

from app.services.ports import LeaseStore
from app.store.errors import StoreError

__all__ = ["AheadLeases", "Taken"]

log = logging.getLogger("compactor.proxy")

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

    @asynccontextmanager
    async def held(self, key: tuple[str, ...]) -> AsyncIterator[None]:
        """Keeps the lease of `key` (taken already) while the block runs, renewed every
        third of its length, and gives it up when the block ends, even when it is
        cancelled: a lease left behind would stop every replica for `seconds`."""
        if self._leases is None:
            yield
            return
        async with anyio.create_task_group() as group:
            group.start_soon(self._renew, key)
            try:
                yield
            finally:
                group.cancel_scope.cancel()
                with anyio.CancelScope(shield=True):
                    await self.release(key)

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
            if await self.take(key) is Taken.ELSEWHERE:
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
