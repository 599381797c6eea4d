"""The proxy's summary cache in SQL (the `SummaryStore` port of
`app.services.ports`): tenant-scoped, bounded, shared by every replica on one database.

An entry is keyed by tenant, scope and the hash of the exact prefix it summarizes; a
lookup reads the scope's (length, hash) pairs with one indexed query, and the summary of
the one entry that matches afterwards. Rows never change once written.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import asdict

from sqlalchemy import bindparam, delete, select
from sqlalchemy.orm import Session, sessionmaker

from app.store.errors import DuplicateKeyError, translated_transaction
from app.store.models import SummaryCacheRow
from app.store.views import CachedSummary, StoredPrefix

# On the proxy's hot path: a plain Core statement built once (an ORM-enabled select built
# per call costs twice as much as the indexed query itself).
_COLUMNS = SummaryCacheRow.__table__.c
_CANDIDATES = (
    select(_COLUMNS.id, _COLUMNS.prefix_len, _COLUMNS.prefix_hash)
    .where(_COLUMNS.tenant == bindparam("tenant"), _COLUMNS.scope_key == bindparam("scope_key"))
    .order_by(_COLUMNS.prefix_len.desc())
)


class SqlSummaryStore:
    """Summaries of history prefixes in the `summary_cache` table, at most
    `max_entries_per_tenant` per tenant (its oldest go first)."""

    def __init__(self, sessions: sessionmaker[Session], max_entries_per_tenant: int) -> None:
        self._sessions = sessions
        self.max_entries = max_entries_per_tenant

    def _transaction(self) -> AbstractContextManager[Session]:
        return translated_transaction(self._sessions)

    def candidates(self, tenant: str, scope: str) -> list[StoredPrefix]:
        """The tenant's entries in this scope, longest prefix first (no summaries read)."""
        with self._transaction() as db:
            rows = db.execute(_CANDIDATES, {"tenant": tenant, "scope_key": scope}).all()
        return [StoredPrefix(str(r[0]), int(r[1]), str(r[2])) for r in rows]

    def summary(self, entry: StoredPrefix) -> CachedSummary | None:
        """The summary of an entry; None when it was evicted since it was listed."""
        with self._transaction() as db:
            row = db.get(SummaryCacheRow, int(entry.entry))
            if row is None:
                return None
            return CachedSummary(row.prefix_len, row.prefix_tokens, row.summary_message)

    def add(self, tenant: str, scope: str, prefix_hash: str, summary: CachedSummary) -> None:
        """Stores a summary, then evicts the tenant's oldest entries beyond the bound; a
        concurrent request that stored the same one first wins (not an error)."""
        row = SummaryCacheRow(
            tenant=tenant, scope_key=scope, prefix_hash=prefix_hash, **asdict(summary)
        )
        try:
            with self._transaction() as db:
                db.add(row)
                db.flush()
                newest = (
                    select(SummaryCacheRow.id)
                    .where(SummaryCacheRow.tenant == tenant)
                    .order_by(SummaryCacheRow.id.desc())
                    .limit(self.max_entries)
                )
                db.execute(
                    delete(SummaryCacheRow).where(
                        SummaryCacheRow.tenant == tenant, SummaryCacheRow.id.not_in(newest)
                    )
                )
        except DuplicateKeyError:
            return
