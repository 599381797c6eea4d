"""Migration 0012 (PostgreSQL): search reads a stored, generated tsvector column with a
GIN index on it. Entries stored before it are found after it (the column is computed for
them when it is added), entries appended after it too, and the downgrade gives back the
expression index the previous revision searched with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from app.engine.search import parse_query
from app.main import create_app
from app.settings import Settings
from app.store.database import create_db_engine
from app.store.migrate import downgrade, upgrade
from app.store.search import PG_INDEX, PG_ROLE_COLUMN, PG_VECTOR_COLUMN, pg_tsqueries
from app.tokenizers.bpe import TokenizerRegistry
from tests.conftest import fresh_database


@pytest.fixture
def pg_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh PostgreSQL database at the head revision (the search column is PG's)."""
    yield from fresh_database(request, tmp_path, "postgresql")


def _index_definition(url: str) -> str:
    with psycopg.connect(url) as db:
        row = db.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (PG_INDEX,)
        ).fetchone()
    assert row is not None, "no search index"
    return str(row[0])


def _hits(client: TestClient, sid: str, q: str) -> list[int]:
    found = client.get(f"/sessions/{sid}/search", params={"q": q})
    assert found.status_code == 200, found.text
    return [h["seq"] for h in found.json()["hits"]]


def test_search_reads_the_stored_vector_and_finds_old_and_new_entries(
    pg_url: str, tokenizers: TokenizerRegistry
) -> None:
    assert PG_VECTOR_COLUMN in _index_definition(pg_url)
    settings = Settings(database_url=pg_url, auto_migrate=False)
    # A session stored at the revision before (the expression index), then upgraded.
    downgrade(pg_url, "0011_compaction_jobs")
    assert "to_tsvector" in _index_definition(pg_url)
    stored = [
        {"role": "user", "content": "Deploy to deploy/staging.toml, port 8443."},
        {"role": "assistant", "content": "Deployed; nginx fronts it."},
    ]
    with TestClient(create_app(settings, tokenizers=tokenizers)) as client:
        sid = client.post("/sessions", json={}).json()["id"]
        client.post(f"/sessions/{sid}/messages", json={"messages": stored})
    upgrade(pg_url)
    assert PG_VECTOR_COLUMN in _index_definition(pg_url)
    with TestClient(create_app(settings, tokenizers=tokenizers)) as client:
        assert _hits(client, sid, "staging") == [0]
        assert _hits(client, sid, "nginx") == [1]
        more = [{"role": "user", "content": "Now roll back the staging deploy."}]
        client.post(f"/sessions/{sid}/messages", json={"messages": more})
        assert set(_hits(client, sid, "staging")) == {0, 2}
        assert _hits(client, sid, "roll back") == [2]


def _pending_pages(url: str) -> int:
    """Merges the GIN index's pending list; how many pages it held."""
    with psycopg.connect(url) as db:
        row = db.execute("SELECT gin_clean_pending_list(%s::regclass)", (PG_INDEX,)).fetchone()
    assert row is not None
    return int(row[0])


def _columns(url: str) -> set[str]:
    with psycopg.connect(url) as db:
        rows = db.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s",
            ("transcript_entries",),
        ).fetchall()
    return {str(r[0]) for r in rows}


def _index_options(url: str) -> list[str]:
    with psycopg.connect(url) as db:
        row = db.execute("SELECT reloptions FROM pg_class WHERE relname = %s", (PG_INDEX,))
        found = row.fetchone()
    assert found is not None
    return list(found[0] or [])


def test_appended_entries_go_straight_into_the_index_not_a_pending_list(
    pg_url: str, tokenizers: TokenizerRegistry
) -> None:
    """0013: a transcript is appended to all the time; entries left in GIN's pending list
    are read by every search (and made the planner scan the session's entries instead)."""
    assert _index_options(pg_url) == ["fastupdate=off"]
    settings = Settings(database_url=pg_url, auto_migrate=False)
    batch = [
        {"role": "user", "content": f"note {i}: the gateway listens on {8000 + i}"}
        for i in range(300)
    ]
    with TestClient(create_app(settings, tokenizers=tokenizers)) as client:
        sid = client.post("/sessions", json={}).json()["id"]
        client.post(f"/sessions/{sid}/messages", json={"messages": batch}).raise_for_status()
        assert _pending_pages(pg_url) == 0
        assert _hits(client, sid, "8299") == [299]
        found = client.get(f"/sessions/{sid}/search", params={"q": "gateway 8001"}).json()
        assert [(h["seq"], h["role"]) for h in found["hits"]] == [(1, "user")]
    downgrade(pg_url, "0012_search_vector")
    assert PG_ROLE_COLUMN not in _columns(pg_url)
    assert _index_options(pg_url) == []
    upgrade(pg_url)
    assert _index_options(pg_url) == ["fastupdate=off"]
    assert PG_ROLE_COLUMN in _columns(pg_url)


def test_a_query_with_exclusions_ranks_every_hit_as_the_whole_query_would(
    pg_url: str, tokenizers: TokenizerRegistry
) -> None:
    """Hits of a query with excluded one-lexeme terms are ranked without them (cheaper):
    every hit, in order, has the score `ts_rank_cd` gives it with the whole query, the
    best ones first as before; an excluded phrase or a word the parser splits is ranked
    with the whole query."""
    settings = Settings(database_url=pg_url, auto_migrate=False)
    words = ["deploy", "staging", "config", "nginx", "port", "write", "read", "json", "file"]
    entries = [
        {
            "role": "user" if i % 2 else "assistant",
            "content": " ".join(words[(i * k + k * k) % len(words)] for k in range(1, 2 + (i % 17)))
            + f" filler {i}",
        }
        for i in range(400)
    ]
    queries = [
        "deploy -write",
        "config* -json",
        "nginx OR port -read -file",
        "staging -wri*",
        'deploy -"read json"',
        "deploy -read_file",
        "port -the",
    ]
    with TestClient(create_app(settings, tokenizers=tokenizers)) as client:
        sid = client.post("/sessions", json={}).json()["id"]
        client.post(f"/sessions/{sid}/messages", json={"messages": entries}).raise_for_status()
        engine = create_db_engine(pg_url)
        with Session(engine) as db:
            for q in queries:
                params: dict[str, object] = {"sid": sid}
                matching, _ = pg_tsqueries(parse_query(q), params)
                whole = db.execute(
                    text(
                        f"SELECT seq, ts_rank_cd({PG_VECTOR_COLUMN}, {matching}) AS score "
                        f"FROM transcript_entries WHERE session_id = :sid "
                        f"AND {PG_VECTOR_COLUMN} @@ ({matching}) "
                        "ORDER BY score DESC, seq DESC LIMIT 100"
                    ),
                    params,
                ).all()
                assert whole, q
                found = client.get(f"/sessions/{sid}/search", params={"q": q, "limit": 100}).json()[
                    "hits"
                ]
                assert [(h["seq"], h["score"]) for h in found] == [
                    (seq, pytest.approx(score)) for seq, score in whole
                ], q
        engine.dispose()
