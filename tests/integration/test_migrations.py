"""Migrations: stairway up/down/up, and the models match the migrations."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from app.store.database import create_db_engine
from app.store.migrate import downgrade, upgrade
from app.store.models import Base
from app.store.search import FTS_TABLE, outside_the_models

TABLES = {
    "sessions",
    "transcript_entries",
    "compactions",
    "idempotency_keys",
    "summary_cache",
    "ui_logins",
    "bound_turns",
    "leases",
    "session_changes",
    "cost_ledger",
    "compaction_jobs",
}
# SQLite's full-text index of the transcript: the FTS5 table and its shadow tables.
FTS_TABLES = {
    FTS_TABLE,
    *(f"{FTS_TABLE}_{suffix}" for suffix in ("data", "idx", "docsize", "config")),
}


def _expected(url: str) -> set[str]:
    return TABLES | FTS_TABLES if url.startswith("sqlite") else TABLES


def _tables(url: str) -> set[str]:
    engine = create_db_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_stairway_downgrade_and_upgrade_again(database_url: str) -> None:
    assert _tables(database_url) == _expected(database_url)
    downgrade(database_url, "base")
    assert _tables(database_url) == set()
    upgrade(database_url)
    assert _tables(database_url) == _expected(database_url)
    upgrade(database_url)  # a second run is a no-op


def test_models_match_the_migrations(database_url: str) -> None:
    engine = create_db_engine(database_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection,
                opts={
                    "compare_type": True,
                    "render_as_batch": True,
                    "include_object": outside_the_models,
                },
            )
            assert compare_metadata(context, Base.metadata) == []
    finally:
        engine.dispose()


# Each replica imports everything first, then waits for the word: the three then race on
# the first migration of a fresh database at the same moment, however slow their starts.
_REPLICA = """
import sys
from app.store.migrate import upgrade
print("ready", flush=True)
sys.stdin.readline()
upgrade(sys.argv[1])
"""


def test_replicas_migrating_together_all_succeed(postgres_server: str) -> None:
    """AUTO_MIGRATE with several replicas starting at once: an advisory lock makes them
    take turns instead of racing to create the same tables (issue 11)."""
    import subprocess
    import sys
    import uuid

    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = postgres_server.rsplit("/", 1)[0] + f"/{name}"
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _REPLICA, url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        for run in runs:
            assert run.stdout is not None and run.stdout.readline() == "ready\n"
        for run in runs:
            assert run.stdin is not None
            run.stdin.write("go\n")
            run.stdin.flush()
        errors = [run.communicate(timeout=120)[1] for run in runs]
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
    assert [run.returncode for run in runs] == [0, 0, 0], [err[-500:] for err in errors]
    assert _tables(url) == TABLES
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_downgrading_keeps_the_transcript(database_url: str) -> None:
    """A downgrade that rebuilds the sessions table (SQLite's batch mode) must not take
    the transcript with it through ON DELETE CASCADE."""
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings

    with TestClient(create_app(Settings(database_url=database_url))) as client:
        sid = client.post("/sessions", json={}).json()["id"]
        turn = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        client.post(f"/sessions/{sid}/messages", json={"messages": turn})
    downgrade(database_url, "0001")
    upgrade(database_url)
    with TestClient(create_app(Settings(database_url=database_url))) as client:
        assert client.get(f"/sessions/{sid}/transcript").json()["messages"] == turn
