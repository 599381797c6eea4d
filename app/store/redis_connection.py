"""One Redis for the state replicas share (`COMPACTOR_REDIS_URL`): its clients, its key
names, and the one place Redis library errors become the store's.

Both clients of the `redis` package are kept: the synchronous one for adapters called
from worker threads (the summary cache, leases), the asyncio one for the resend memos,
asked on the event loop. Commands are short (a few keys, or one short Lua script), so
each has a short timeout (`COMPACTOR_REDIS_TIMEOUT_SECONDS`); once Redis has failed,
calls fail at once for `RETRY_AFTER_SECONDS` instead of each waiting for its timeout,
and the outage and the recovery are logged once each.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import redis
import redis.asyncio
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from app.store.errors import StoreError, StoreUnreachableError

log = logging.getLogger("compactor.redis")
T = TypeVar("T")

# After a failure, calls fail at once for this long, then the next one tries again.
RETRY_AFTER_SECONDS = 2.0


def redis_error(exc: RedisError) -> StoreError:
    """The store error a Redis library error means."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, RedisConnectionError | RedisTimeoutError):
        return StoreUnreachableError(f"redis is unavailable: {reason}")
    return StoreError(f"redis refused the command: {reason}")


class RedisHealth:
    """Whether Redis answered last time: fails calls fast for a while after a failure
    (one log line per outage, one when it answers again)."""

    def __init__(
        self,
        retry_after_seconds: float = RETRY_AFTER_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._retry_after = retry_after_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._down_until: float | None = None
        self._down = False

    def check(self) -> None:
        """Raises StoreUnreachableError while failing fast after a failure."""
        until = self._down_until
        if until is not None and self._clock() < until:
            raise StoreUnreachableError("redis is unavailable (failed recently; retrying soon)")

    def failed(self, error: StoreError) -> None:
        """Counts a failure: an unreachable Redis is not asked again for a while."""
        if not isinstance(error, StoreUnreachableError):
            return
        with self._lock:
            self._down_until = self._clock() + self._retry_after
            first = not self._down
            self._down = True
        if first:
            log.warning(
                "redis unavailable: shared caches miss until it answers",
                extra={"error": str(error)},
            )

    def succeeded(self) -> None:
        """Counts an answer (logs the recovery after an outage)."""
        if not self._down:
            return
        with self._lock:
            recovered, self._down, self._down_until = self._down, False, None
        if recovered:
            log.info("redis answers again: shared caches back")


class RedisConnection:
    """The shared Redis: clients, key names under `prefix`, error translation."""

    def __init__(self, url: str, *, prefix: str, timeout_seconds: float) -> None:
        # One immediate retry: a pooled connection Redis closed (a restart) is replaced
        # at once; a Redis that is down fails within one timeout or two.
        self.sync = redis.Redis.from_url(
            url,
            socket_timeout=timeout_seconds,
            socket_connect_timeout=timeout_seconds,
            retry=Retry(NoBackoff(), 1),
        )
        self.asyncio = redis.asyncio.Redis.from_url(
            url,
            socket_timeout=timeout_seconds,
            socket_connect_timeout=timeout_seconds,
            retry=AsyncRetry(NoBackoff(), 1),
        )
        self.prefix = prefix
        self.health = RedisHealth()

    def key(self, *parts: str) -> str:
        """A key name under the prefix (`compactor:` by default)."""
        return self.prefix + ":".join(parts)

    def run(self, command: Callable[[], T]) -> T:
        """Runs a command of the synchronous client; raises StoreError on failure."""
        with self._watched():
            return command()

    async def run_async(self, command: Callable[[], Awaitable[T]]) -> T:
        """Runs a command of the asyncio client; raises StoreError on failure."""
        with self._watched():
            return await command()

    @contextmanager
    def _watched(self) -> Iterator[None]:
        """Fails fast while Redis is known down; a command's failure or success is
        what the health record learns."""
        self.health.check()
        try:
            yield
        except RedisError as exc:
            error = redis_error(exc)
            self.health.failed(error)
            raise error from exc
        self.health.succeeded()

    async def aclose(self) -> None:
        """Closes both clients' connections."""
        await self.asyncio.aclose()
        self.sync.close()


def tenant_key(tenant: str) -> str:
    """A tenant as a key part: fixed length, no separator inside."""
    return hashlib.sha256(tenant.encode()).hexdigest()[:32]


def body_digest(raw: bytes) -> str:
    """A body as a key part: SHA-256 of its exact bytes (the same on every replica)."""
    return hashlib.sha256(raw).hexdigest()
