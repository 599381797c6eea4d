"""SQL of the cost ledger (table `cost_ledger`, SPEC §15): flush, never commit.

Append-only: a row per billed call. A session's lines are read one by one (the cost
route prices each against the compactions before it); a tenant's are summed in SQL.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.store.mapping import aware
from app.store.models import CostLedgerRow
from app.store.views import BilledTokens, LedgerEntry, LedgerLine


class CostLedgerRepository:
    """Adds ledger rows and reads them back per session and per tenant."""

    def __init__(self, db: Session) -> None:
        self.db = db

    def add(self, entry: LedgerEntry) -> None:
        """Records one billed call."""
        tokens = entry.tokens
        self.db.add(
            CostLedgerRow(
                tenant=entry.tenant,
                session_id=entry.session_id,
                source=entry.source,
                api=entry.api[:40],
                model=entry.model[:200],
                input_tokens=tokens.input_tokens,
                cache_write_tokens=tokens.cache_write_tokens,
                cache_read_tokens=tokens.cache_read_tokens,
                output_tokens=tokens.output_tokens,
                cache_write_1h_tokens=tokens.cache_write_1h_tokens,
            )
        )
        self.db.flush()

    def session_lines(self, tenant: str, session_id: str) -> list[LedgerLine]:
        """The session's calls, oldest first."""
        rows = self.db.scalars(
            select(CostLedgerRow)
            .where(CostLedgerRow.tenant == tenant, CostLedgerRow.session_id == session_id)
            .order_by(CostLedgerRow.id)
        )
        return [
            LedgerLine(
                row.source,
                row.api,
                row.model,
                BilledTokens(
                    row.input_tokens,
                    row.cache_write_tokens,
                    row.cache_read_tokens,
                    row.output_tokens,
                    row.cache_write_1h_tokens,
                ),
                1,
                aware(row.created_at),
            )
            for row in rows
        ]

    def tenant_totals(self, tenant: str) -> list[LedgerLine]:
        """The tenant's calls summed by source, API and model (sessions and stateless)."""
        c = CostLedgerRow
        query = (
            select(
                c.source,
                c.api,
                c.model,
                func.sum(c.input_tokens),
                func.sum(c.cache_write_tokens),
                func.sum(c.cache_read_tokens),
                func.sum(c.output_tokens),
                func.sum(c.cache_write_1h_tokens),
                func.count(),
                func.max(c.created_at),
            )
            .where(c.tenant == tenant)
            .group_by(c.source, c.api, c.model)
            .order_by(c.source, c.api, c.model)
        )
        return [
            LedgerLine(
                source,
                api,
                model,
                BilledTokens(int(i or 0), int(w or 0), int(r or 0), int(o or 0), int(h or 0)),
                int(calls),
                aware(latest),
            )
            for source, api, model, i, w, r, o, h, calls, latest in self.db.execute(query)
        ]
