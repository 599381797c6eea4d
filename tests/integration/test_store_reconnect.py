"""PostgreSQL connections in the pool: one that sat idle is pinged before use, so a
restart of the database costs no request; one in use a moment ago is not pinged (a
round trip saved on every request under load)."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text

from app.store import database
from app.store.database import create_db_engine
from tests.postgres import restartable_cluster, server_bin_dir

pytestmark = pytest.mark.skipif(server_bin_dir() is None, reason="no PostgreSQL binaries")


def test_a_restart_of_the_database_costs_no_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(database, "PING_AFTER_IDLE_SECONDS", 0.2)
    with restartable_cluster() as cluster:
        engine = create_db_engine(cluster.url)
        with engine.connect() as db:
            assert db.execute(text("SELECT 1")).scalar() == 1
        cluster.restart()
        time.sleep(0.3)
        with engine.connect() as db:
            assert db.execute(text("SELECT 2")).scalar() == 2
        engine.dispose()


def test_a_connection_used_a_moment_ago_is_handed_out_without_a_ping(
    postgres_server: str,
) -> None:
    engine = create_db_engine(postgres_server)
    pings: list[object] = []
    original = engine.dialect.do_ping
    engine.dialect.do_ping = lambda c: pings.append(c) or original(c)  # type: ignore[method-assign]
    for _ in range(5):
        with engine.connect() as db:
            db.execute(text("SELECT 1"))
    assert pings == []
    engine.dispose()
