"""What the store keeps, and for how long, on SQLite and PostgreSQL: Idempotency-Keys
expire after their retention (and are cleaned up as appends go), and every SQLite
connection of the service syncs each commit, so an acknowledged append survives a
power loss."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, func, select, update
from sqlalchemy.pool import Pool

from app.main import create_app
from app.services.sessions.appends import EXPIRED_KEYS_PER_APPEND
from app.settings import Settings
from app.store.database import create_db_engine
from app.store.models import IdempotencyKeyRow

BATCH = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def client(database_url: str) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, idempotency_retention_hours=24)
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def _age_keys(url: str, hours: float, **where: Any) -> None:
    """Moves the keys' creation back by `hours` (as if they were made that long ago)."""
    engine = create_db_engine(url)
    try:
        with engine.begin() as db:
            table = IdempotencyKeyRow.__table__
            query = update(table).values(created_at=datetime.now(UTC) - timedelta(hours=hours))
            for column, value in where.items():
                query = query.where(table.c[column] == value)
            db.execute(query)
    finally:
        engine.dispose()


def _keys(url: str) -> int:
    engine = create_db_engine(url)
    try:
        with engine.connect() as db:
            return int(db.scalar(select(func.count()).select_from(IdempotencyKeyRow)) or 0)
    finally:
        engine.dispose()


def test_an_idempotency_key_past_its_retention_appends_the_batch_again(
    client: TestClient, database_url: str
) -> None:
    sid = client.post("/sessions", json={}).json()["id"]
    old, recent = {"Idempotency-Key": "old"}, {"Idempotency-Key": "recent"}
    assert client.post(f"/sessions/{sid}/messages", json=BATCH, headers=old).json() == {
        "appended": 1,
        "first_seq": 0,
        "last_seq": 0,
    }
    client.post(f"/sessions/{sid}/messages", json=BATCH, headers=recent)
    _age_keys(database_url, 25, key="old")
    _age_keys(database_url, 23, key="recent")
    # Within the retention a retry still appends nothing and answers as the first time.
    replay = client.post(f"/sessions/{sid}/messages", json=BATCH, headers=recent)
    assert replay.json() == {"appended": 1, "first_seq": 1, "last_seq": 1}
    # Past it the key is forgotten: the same batch appends again, a new one is accepted.
    again = client.post(f"/sessions/{sid}/messages", json=BATCH, headers=old)
    assert again.status_code == 200, again.text
    assert again.json() == {"appended": 1, "first_seq": 2, "last_seq": 2}
    assert client.get(f"/sessions/{sid}/transcript").json()["total"] == 3
    # ... and is kept again from now on.
    assert client.post(f"/sessions/{sid}/messages", json=BATCH, headers=old).json() == {
        "appended": 1,
        "first_seq": 2,
        "last_seq": 2,
    }


def test_expired_keys_are_deleted_a_bounded_batch_per_keyed_append(
    client: TestClient, database_url: str
) -> None:
    sid = client.post("/sessions", json={}).json()["id"]
    expired = 2 * EXPIRED_KEYS_PER_APPEND + 30
    engine = create_db_engine(database_url)
    try:
        with engine.begin() as db:
            db.execute(
                IdempotencyKeyRow.__table__.insert(),
                [
                    {
                        "session_id": sid,
                        "key": f"k{i}",
                        "request_hash": "0" * 64,
                        "response": {"appended": 0, "first_seq": None, "last_seq": None},
                        "created_at": datetime.now(UTC) - timedelta(days=3),
                    }
                    for i in range(expired)
                ],
            )
    finally:
        engine.dispose()
    client.post(f"/sessions/{sid}/messages", json=BATCH)  # no key: no clean-up
    assert _keys(database_url) == expired
    client.post(f"/sessions/{sid}/messages", json=BATCH, headers={"Idempotency-Key": "a"})
    assert _keys(database_url) == expired - EXPIRED_KEYS_PER_APPEND + 1
    for key in ("b", "c"):
        client.post(f"/sessions/{sid}/messages", json=BATCH, headers={"Idempotency-Key": key})
    # Every expired key is gone; the three live ones stay.
    assert _keys(database_url) == 3


def _synchronous_levels(settings: Settings) -> list[int]:
    """PRAGMA synchronous of every SQLite connection the service holds open after a
    session and an append (2 = FULL, 1 = NORMAL); the migration's are closed by then."""
    opened: list[sqlite3.Connection] = []

    def remember(dbapi_connection: Any, _record: Any) -> None:
        opened.append(dbapi_connection)

    event.listen(Pool, "connect", remember)
    try:
        with TestClient(create_app(settings)) as client:
            sid = client.post("/sessions", json={}).json()["id"]
            assert client.post(f"/sessions/{sid}/messages", json=BATCH).status_code == 200
            levels = []
            for connection in opened:
                try:
                    levels.append(int(connection.execute("PRAGMA synchronous").fetchone()[0]))
                except sqlite3.ProgrammingError:  # closed
                    continue
            assert levels
            return levels
    finally:
        event.remove(Pool, "connect", remember)


def test_sqlite_syncs_every_commit_so_an_acknowledged_append_survives_power_loss(
    tmp_path: Path,
) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'durable.db'}")
    assert set(_synchronous_levels(settings)) == {2}


def test_sqlite_can_be_told_to_sync_only_at_checkpoints(tmp_path: Path) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'fast.db'}", sqlite_synchronous="NORMAL"
    )
    assert set(_synchronous_levels(settings)) == {1}


def test_the_transcript_reads_back_exactly_what_was_appended(
    client: TestClient, database_url: str
) -> None:
    """Read as columns, not ORM rows: the same values, integers beyond 64 bits too."""
    sid = client.post("/sessions", json={}).json()["id"]
    messages = [
        {"role": "user", "content": "naïve café 🚀 \u2028 ok", "x_meta": {"n": 2**64 + 1}},
        {"role": "assistant", "content": "", "x": [-(2**70), 0.1, -0.0, 1e300, None, True]},
    ]
    assert client.post(f"/sessions/{sid}/messages", json={"messages": messages}).status_code == 200
    transcript = client.get(f"/sessions/{sid}/transcript")
    assert transcript.json()["messages"] == messages
    assert "18446744073709551617" in transcript.text
    assert client.get(f"/sessions/{sid}/context").json()["messages"] == messages
