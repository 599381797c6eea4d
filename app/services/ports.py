"""Ports: what the services need from shared state kept outside the process, as
Protocols. Adapters live in `app.store` (SQL, and Redis when `COMPACTOR_REDIS_URL` is
set) and are chosen in `app.composition`; the services see only these Protocols.

Every adapter raises `app.store.errors.StoreError` (or a subclass) when it cannot
answer, and nothing else for a failure of its backend, so one tolerant wrapper
(`app.services.proxy.summary_cache.ignoring_store_errors`, and its async twin in
`app.services.proxy.resend_memo`) covers them all: shared state that cannot be reached
is a miss, never a failed request.

Synchronous ports are called from worker threads (the SQL adapters block); the resend
memo is asked on the event loop, before anything is parsed, so it is asynchronous.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from app.store.views import CachedSummary, CompactedResend, StoredPrefix


class SummaryStore(Protocol):
    """The proxy's summaries of history prefixes (SPEC §10), shared by every replica:
    keyed by tenant, scope and the hash of the exact prefix, bounded per tenant.

    Entries never change once written; the matching of a history against them is the
    services' (`SummaryCache`), the same for every backend."""

    def candidates(self, tenant: str, scope: str) -> Sequence[StoredPrefix]:
        """The tenant's entries in this scope, longest prefix first, without summaries."""
        ...

    def summary(self, entry: StoredPrefix) -> CachedSummary | None:
        """The summary of a listed entry; None when it was evicted since."""
        ...

    def add(self, tenant: str, scope: str, prefix_hash: str, summary: CachedSummary) -> None:
        """Stores a summary (evicting the tenant's oldest beyond the bound); an equal entry
        stored first by a concurrent request is kept, and is not an error."""
        ...


class ResendMemo(Protocol):
    """What the proxy remembers of bodies it saw (SPEC §10, §18), keyed by their exact
    bytes: bodies known to be under their threshold (not tenant-scoped: the same bytes
    count the same for everyone) and what was forwarded for a compacted one (per tenant).
    Bounded (in the process by entries and bytes, in Redis by a time to live); entries
    never change once written."""

    async def under_threshold(self, api: str, raw: bytes) -> int | None:
        """The token count of a body seen before, byte for byte, under its threshold."""
        ...

    async def remember_under_threshold(self, api: str, raw: bytes, tokens: int) -> None:
        """Remembers a body found under its threshold, with its token count."""
        ...

    async def compacted(self, tenant: str, api: str, raw: bytes) -> CompactedResend | None:
        """What was forwarded for this very body (same tenant, same bytes), if it was
        compacted before."""
        ...

    async def remember_compacted(
        self, tenant: str, api: str, raw: bytes, resend: CompactedResend
    ) -> None:
        """Remembers what was forwarded for a compacted body."""
        ...


class LeaseStore(Protocol):
    """Named leases with a time to live, so one replica at a time does a piece of work
    (a background summary per session or prefix, SPEC §16): a replica that dies loses
    its lease when the time runs out. Each adapter holds leases as one holder (a random
    id per replica, its `holder`); calls block (run them in a worker thread). A backend
    that cannot answer raises `StoreError`: treat it as "not acquired" (skip the work)."""

    holder: str

    def acquire(self, key: str, ttl_seconds: float) -> bool:
        """Takes the lease for `ttl_seconds` when nobody holds it (or it expired), or
        extends it when this holder has it already; False when another holder has it."""
        ...

    def release(self, key: str) -> None:
        """Gives the lease up if this holder still has it (nothing otherwise)."""
        ...
