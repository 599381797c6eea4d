"""The cost ledger's table on SQLite and PostgreSQL (SPEC §15): rows appended from many
threads at once are all there, a session's ledger is its tenant's only, and a tenant's
totals sum its sessions and its stateless requests."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.registry import load_registry
from app.services.cost_ledger import SUMMARIZER, UPSTREAM, CostLedger
from app.services.sessions.errors import SessionNotFoundError
from app.services.sessions.transactions import SessionStore
from app.store.database import create_db_engine, session_factory
from app.store.transactions import SessionDatabase
from app.store.views import BilledTokens, LedgerEntry, NewSession

MODEL = "claude-sonnet-4-5-20250929"


@pytest.fixture
def ledger(database_url: str) -> Iterator[tuple[CostLedger, SessionStore]]:
    engine = create_db_engine(database_url)
    store = SessionStore(SessionDatabase(session_factory(engine)))
    yield CostLedger(store, load_registry()), store
    engine.dispose()


def test_concurrent_appends_are_all_recorded_and_tenant_scoped(
    ledger: tuple[CostLedger, SessionStore],
) -> None:
    costs, store = ledger
    with store.transaction() as tx:
        session = tx.sessions.add("acme", NewSession(model=MODEL)).id
    call = BilledTokens(input_tokens=3, cache_write_tokens=1000, cache_read_tokens=20_000)

    def record(i: int) -> None:
        bound = session if i % 2 == 0 else None  # every other one stateless
        entry = LedgerEntry("acme", bound, UPSTREAM, "messages", MODEL, call)
        with store.transaction() as tx:
            costs.add_in(tx, entry)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(record, range(40)))
    summary = LedgerEntry(
        "acme", session, SUMMARIZER, "anthropic", "claude-sonnet-4-5", BilledTokens(5000, 0, 0, 400)
    )
    with store.transaction() as tx:
        costs.add_in(tx, summary)

    cost = costs.cost_of("acme", session)
    assert cost.upstream.calls == 20
    assert cost.upstream.tokens == BilledTokens(60, 20_000, 400_000, 0)
    # $3/M input, $3.75/M write, $0.30/M read.
    assert cost.upstream.total == pytest.approx((60 * 3 + 20_000 * 3.75 + 400_000 * 0.3) / 1e6)
    assert cost.summarizer.calls == 1
    assert cost.summarizer.total == pytest.approx((5000 * 3 + 400 * 15) / 1e6)

    totals = {(line.source, line.api): line for line in costs.tenant_lines("acme")}
    assert totals[(UPSTREAM, "messages")].calls == 40
    assert totals[(UPSTREAM, "messages")].tokens.cache_read_tokens == 800_000
    assert totals[(SUMMARIZER, "anthropic")].tokens.output_tokens == 400

    with pytest.raises(SessionNotFoundError):
        costs.cost_of("other-tenant", session)
    assert costs.tenant_lines("other-tenant") == []
