"""PostgreSQL connections in the pool are pinged before use, so a restart of the
database costs no request: the dead pooled connection is replaced, not handed out."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from app.store.database import create_db_engine
from tests.postgres import restartable_cluster, server_bin_dir

pytestmark = pytest.mark.skipif(server_bin_dir() is None, reason="no PostgreSQL binaries")


def test_a_restart_of_the_database_costs_no_request() -> None:
    with restartable_cluster() as cluster:
        engine = create_db_engine(cluster.url)
        with engine.connect() as db:
            assert db.execute(text("SELECT 1")).scalar() == 1
        cluster.restart()
        with engine.connect() as db:
            assert db.execute(text("SELECT 2")).scalar() == 2
        engine.dispose()
