"""Ports: what the services need from shared state kept outside the process, as
Protocols. Adapters live in `app.store` (SQL today; a Redis adapter goes beside it) and
are chosen in `app.composition`; the services see only these Protocols.

Every adapter raises `app.store.errors.StoreError` (or a subclass) when it cannot
answer, and nothing else for a failure of its backend, so one tolerant wrapper
(`app.services.proxy.summary_cache.ignoring_store_errors`) covers them all.

Shared state the proxy keeps per process today (the resend memos of
`TransparentCompactor`) and the compaction leases of bound requests get their Protocol
here when they move out of the process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from app.store.views import CachedSummary, StoredPrefix


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
