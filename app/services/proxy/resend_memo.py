"""What the proxy remembers of bodies it saw, so a body resent byte for byte (a stateless
caller's retry, a client resending its last request, the same request landing on
another replica) is not parsed, counted or compacted again: bodies known to be under
their threshold, and what was forwarded for a compacted one. Both are keyed by the exact
bytes.

A compacted body is remembered as a recipe (`CompactedResend`): the messages of the
received history kept unchanged at each end, and the ones between (the summary) as
JSON. Rebuilding it from the resent bytes gives exactly the forwarded history again,
and an entry holds a summary's bytes instead of a whole history's, so the memo can be
shared (Redis) and still hold many entries within its byte bound.

Where the memos live is a port (`app.services.ports.ResendMemo`): `ResendMemos` here
(per process, the default) or, with `COMPACTOR_REDIS_URL`, `SharedResendMemos`: this
process's memos in front of the shared ones, which every replica reads and writes.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import orjson

from app.services.ports import ResendMemo
from app.store.errors import StoreError
from app.store.views import CompactedResend

__all__ = [
    "CompactedResend",
    "ResendMemos",
    "SharedResendMemos",
    "compacted_resend",
    "rebuilt_history",
]

log = logging.getLogger("compactor.proxy")
T = TypeVar("T")

UNDER_THRESHOLD_ENTRIES = 4096
# At most this many compacted bodies, and at most this many bytes of their recipes, per
# process (a recipe is about a summary's size: a few kB).
COMPACTED_RESEND_ENTRIES = 1024
COMPACTED_RESEND_BYTES = 64 * 1024 * 1024


def body_key(api: str, raw: bytes) -> tuple[str, int, int]:
    # Length plus SipHash, like the per-message count cache: keys never leave the process.
    return api, len(raw), hash(raw)


def _same_bytes(received: Any, forwarded: Any) -> bool:
    """True when a forwarded message serializes exactly as the received one did (the
    same object, or equal JSON bytes: `1` and `1.0` are equal in Python, not on the wire)."""
    if received is forwarded:
        return True
    try:
        return orjson.dumps(received) == orjson.dumps(forwarded)
    except TypeError:
        return False


def compacted_resend(
    received: Sequence[Any], forwarded: Sequence[Any], tokens: tuple[int, int]
) -> CompactedResend | None:
    """The recipe of a forwarded history over the received one: the longest unchanged
    lead and tail, and what lies between; None when that is not plain JSON."""
    n, m = len(received), len(forwarded)
    lead = 0
    while lead < min(n, m) and _same_bytes(received[lead], forwarded[lead]):
        lead += 1
    tail = 0
    while tail < min(n, m) - lead and _same_bytes(received[n - 1 - tail], forwarded[m - 1 - tail]):
        tail += 1
    try:
        middle = orjson.dumps(list(forwarded[lead : m - tail]))
    except TypeError:
        return None
    return CompactedResend(
        history_len=n,
        lead=lead,
        keep_from=n - tail,
        middle=middle,
        tokens_before=tokens[0],
        tokens_after=tokens[1],
    )


def rebuilt_history(resend: CompactedResend, received: Sequence[Any]) -> list[Any] | None:
    """The history forwarded last time for this received one (fresh copies of the
    changed messages); None when the recipe does not fit it."""
    if len(received) != resend.history_len or not 0 <= resend.lead <= resend.keep_from:
        return None
    if resend.keep_from > len(received):
        return None
    try:
        middle = orjson.loads(resend.middle)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(middle, list):
        return None
    return [*received[: resend.lead], *middle, *received[resend.keep_from :]]


class ResendMemos:
    """Per-process memos of bodies seen (thread-safe; no I/O, so the async methods
    never suspend)."""

    def __init__(
        self,
        under_entries: int = UNDER_THRESHOLD_ENTRIES,
        compacted_entries: int = COMPACTED_RESEND_ENTRIES,
        compacted_bytes: int = COMPACTED_RESEND_BYTES,
    ) -> None:
        self._lock = threading.Lock()
        self._under: OrderedDict[tuple[str, int, int], int] = OrderedDict()
        # How many remembered bodies have each (api, length): a body of a length never
        # seen (a history that grew) is told apart without hashing its bytes.
        self._under_lengths: Counter[tuple[str, int]] = Counter()
        self._under_max = under_entries
        self._compacted: OrderedDict[tuple[str, str, int, int], CompactedResend] = OrderedDict()
        self._compacted_max = compacted_entries
        self._compacted_max_bytes = compacted_bytes
        self._compacted_bytes = 0

    async def under_threshold(self, api: str, raw: bytes) -> int | None:
        """The token count of a body already seen, byte for byte, under its threshold."""
        return self.under_threshold_now(api, raw)

    def under_threshold_now(self, api: str, raw: bytes) -> int | None:
        """`under_threshold`, without the event loop."""
        with self._lock:
            if (api, len(raw)) not in self._under_lengths:
                return None
            key = body_key(api, raw)
            tokens = self._under.get(key)
            if tokens is not None:
                self._under.move_to_end(key)
            return tokens

    async def remember_under_threshold(self, api: str, raw: bytes, tokens: int) -> None:
        """Remembers a body under its threshold (the oldest entries go first)."""
        key = body_key(api, raw)
        with self._lock:
            if key not in self._under:
                self._under_lengths[key[:2]] += 1
            self._under[key] = tokens
            while len(self._under) > self._under_max:
                evicted, _ = self._under.popitem(last=False)
                self._under_lengths[evicted[:2]] -= 1
                if self._under_lengths[evicted[:2]] <= 0:
                    del self._under_lengths[evicted[:2]]

    async def compacted(self, tenant: str, api: str, raw: bytes) -> CompactedResend | None:
        """What was forwarded last time for this very body (same tenant, same bytes)."""
        key = (tenant, *body_key(api, raw))
        with self._lock:
            known = self._compacted.get(key)
            if known is not None:
                self._compacted.move_to_end(key)
            return known

    async def remember_compacted(
        self, tenant: str, api: str, raw: bytes, resend: CompactedResend
    ) -> None:
        """Remembers a compacted body's recipe (the oldest go first, by entries and bytes)."""
        if resend.size > self._compacted_max_bytes:
            return
        key = (tenant, *body_key(api, raw))
        with self._lock:
            previous = self._compacted.pop(key, None)
            if previous is not None:
                self._compacted_bytes -= previous.size
            self._compacted[key] = resend
            self._compacted_bytes += resend.size
            while self._compacted and (
                len(self._compacted) > self._compacted_max
                or self._compacted_bytes > self._compacted_max_bytes
            ):
                _, evicted = self._compacted.popitem(last=False)
                self._compacted_bytes -= evicted.size

    @property
    def compacted_bytes(self) -> int:
        return self._compacted_bytes


async def ignoring_store_errors_async(
    work: Callable[[], Awaitable[T]], on_error: Callable[[str], None]
) -> T | None:
    """A shared memo that cannot be reached is a miss, never a failed request."""
    try:
        return await work()
    except StoreError as exc:
        on_error(type(exc.__cause__ or exc).__name__)
        return None


class SharedResendMemos:
    """This process's memos in front of memos every replica shares (Redis): asked
    first, filled from the shared ones on their hits, written through on every
    remember. A shared memo that fails is a miss, never a failed request."""

    def __init__(self, local: ResendMemos, shared: ResendMemo) -> None:
        self.local = local
        self.shared = shared

    async def under_threshold(self, api: str, raw: bytes) -> int | None:
        """Known here, else known to the replicas."""
        tokens = self.local.under_threshold_now(api, raw)
        if tokens is not None:
            return tokens
        tokens = await ignoring_store_errors_async(
            lambda: self.shared.under_threshold(api, raw), _shared_failed
        )
        if tokens is not None:
            await self.local.remember_under_threshold(api, raw, tokens)
        return tokens

    async def remember_under_threshold(self, api: str, raw: bytes, tokens: int) -> None:
        """Remembered here and for the replicas."""
        await self.local.remember_under_threshold(api, raw, tokens)
        await ignoring_store_errors_async(
            lambda: self.shared.remember_under_threshold(api, raw, tokens), _shared_failed
        )

    async def compacted(self, tenant: str, api: str, raw: bytes) -> CompactedResend | None:
        """Known here, else known to the replicas."""
        known = await self.local.compacted(tenant, api, raw)
        if known is not None:
            return known
        known = await ignoring_store_errors_async(
            lambda: self.shared.compacted(tenant, api, raw), _shared_failed
        )
        if known is not None:
            await self.local.remember_compacted(tenant, api, raw, known)
        return known

    async def remember_compacted(
        self, tenant: str, api: str, raw: bytes, resend: CompactedResend
    ) -> None:
        """Remembered here and for the replicas."""
        await self.local.remember_compacted(tenant, api, raw, resend)
        await ignoring_store_errors_async(
            lambda: self.shared.remember_compacted(tenant, api, raw, resend), _shared_failed
        )


def _shared_failed(kind: str) -> None:
    # Debug only: the adapter's connection logs one warning per outage, not per request.
    log.debug("shared resend memo unavailable", extra={"error": kind})
