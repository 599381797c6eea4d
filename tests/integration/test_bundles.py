"""Export and import (SPEC §17): one JSON Lines bundle streamed out, restored in another
deployment (SQLite ↔ PostgreSQL) with a byte-identical transcript and linked records; a
malformed, altered or truncated bundle is refused with 422 and writes nothing."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry
from tests.conftest import migrated_copy
from tests.integration.test_session_control import conversation, every_row

# Key order, unicode, floats and nested parts exactly as a client sent them.
_ODD = [
    {"role": "user", "content": "naïve café ☕ — \u2028 ok", "z": 1, "a": 1.50},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "src/x.py"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "def parse(): ...\n"},
]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url)


@pytest.fixture
def other_backend(
    database_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[str]:
    """A fresh, migrated database of the other backend: SQLite → PostgreSQL and back."""
    if database_url.startswith("postgresql"):
        yield migrated_copy(request.getfixturevalue("migrated_sqlite"), tmp_path, "other.db")
        return
    import psycopg

    server = request.getfixturevalue("postgres_server")
    template = request.getfixturevalue("migrated_postgres")
    name = f"o_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    yield server.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _compacted_session(client: TestClient) -> str:
    body = {"trigger_tokens": 600, "keep_recent_tokens": 200, "metadata": {"task": "parser"}}
    sid: str = client.post("/sessions", json=body).json()["id"]
    client.post(f"/sessions/{sid}/messages", json={"messages": conversation(20)})
    client.post(f"/sessions/{sid}/compact", json={"instructions": "keep the file names"})
    client.post(f"/sessions/{sid}/messages", json={"messages": _ODD + conversation(8, " b")})
    client.post(f"/sessions/{sid}/compact", json={})
    client.patch(f"/sessions/{sid}", json={"keep_recent_tokens": 150})
    return sid


def _lines(bundle: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in bundle.splitlines()]


def test_export_streams_every_part_and_a_checked_trailer(client: TestClient) -> None:
    sid = _compacted_session(client)
    exported = client.get(f"/sessions/{sid}/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"].startswith("application/x-ndjson")
    assert f"session-{sid}.jsonl" in exported.headers["content-disposition"]
    lines = _lines(exported.content)
    kinds = [line["type"] for line in lines]
    assert kinds[0] == "session" and kinds[-1] == "trailer"
    assert kinds.count("entry") == 31 and kinds.count("compaction") == 2
    assert kinds.count("change") == 1
    trailer = lines[-1]
    assert trailer["entries"] == 31 and trailer["compactions"] == 2
    assert client.get("/sessions/nope/export").status_code == 404


def test_import_into_the_other_backend_is_byte_identical_and_linked(
    client: TestClient, other_backend: str, tokenizers: TokenizerRegistry
) -> None:
    sid = _compacted_session(client)
    bundle = client.get(f"/sessions/{sid}/export").content
    source_transcript = client.get(f"/sessions/{sid}/transcript?limit=1000").content
    source_context = client.get(f"/sessions/{sid}/context").json()
    source_records = client.get(f"/sessions/{sid}/compactions").json()["compactions"]
    with TestClient(
        create_app(Settings(database_url=other_backend), tokenizers=tokenizers)
    ) as other:
        imported = other.post(
            "/sessions/import", content=bundle, headers={"content-type": "application/x-ndjson"}
        )
        assert imported.status_code == 201, imported.text
        new = imported.json()
        assert new["message_count"] == 31 and new["compaction_count"] == 2
        assert new["keep_recent_tokens"] == 150 and new["metadata"]["task"] == "parser"
        nid = new["id"]
        # The originals come back byte for byte, unicode, key order and floats included.
        assert other.get(f"/sessions/{nid}/transcript?limit=1000").content == source_transcript
        # The same context; the summary's recall line names the new session.
        restored_context = other.get(f"/sessions/{nid}/context").json()["messages"]
        assert json.dumps(restored_context).replace(nid, sid) == json.dumps(
            source_context["messages"]
        )
        records = other.get(f"/sessions/{nid}/compactions").json()["compactions"]
        assert [r["summary"] for r in records] == [r["summary"] for r in source_records]
        assert records[1]["previous_id"] == records[0]["id"]
        assert records[0]["instructions"] == "keep the file names"
        assert len(other.get(f"/sessions/{nid}/changes").json()["changes"]) == 1
        # Search works on what was imported (the index is filled on import).
        hits = other.get(f"/sessions/{nid}/search", params={"q": "read_file"}).json()["hits"]
        assert {h["seq"] for h in hits} == {21, 22}
        # And the imported session carries on: a re-export holds the same entry lines.
        again = _lines(other.get(f"/sessions/{nid}/export").content)
        assert [x for x in again if x["type"] == "entry"] == [
            x for x in _lines(bundle) if x["type"] == "entry"
        ]


def _refused(client: TestClient, url: str, body: bytes) -> dict[str, Any]:
    before = every_row(url)
    answer = client.post(
        "/sessions/import", content=body, headers={"content-type": "application/x-ndjson"}
    )
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert every_row(url) == before
    problem: dict[str, Any] = answer.json()
    return problem


def test_a_bundle_cut_anywhere_is_refused_and_writes_nothing(
    client: TestClient, database_url: str
) -> None:
    sid = _compacted_session(client)
    bundle = client.get(f"/sessions/{sid}/export").content
    lines = bundle.splitlines(keepends=True)
    # Cut after whole lines (the trailer lost), and in the middle of a line.
    assert "cut short" in _refused(client, database_url, b"".join(lines[:-1]))["detail"]
    assert "cut short" in _refused(client, database_url, b"".join(lines[:12]))["detail"]
    half = bundle[: len(bundle) // 2]
    assert "nothing was imported" in _refused(client, database_url, half)["detail"]


def test_an_altered_or_malformed_bundle_is_refused_and_writes_nothing(
    client: TestClient, database_url: str
) -> None:
    sid = _compacted_session(client)
    bundle = client.get(f"/sessions/{sid}/export").content
    lines = bundle.splitlines(keepends=True)
    # One entry edited: the checksum in the trailer no longer matches.
    edited = lines[3].replace(b"turn 2", b"turn 9")
    assert edited != lines[3]
    altered = b"".join([*lines[:3], edited, *lines[4:]])
    _refused(client, database_url, altered)
    # A line dropped from the middle.
    _refused(client, database_url, b"".join(lines[:5] + lines[6:]))
    _refused(client, database_url, b"")
    _refused(client, database_url, b"not json\n")
    _refused(client, database_url, b'{"type": "session"}\n')
    assert "follows the trailer" in _refused(client, database_url, bundle + lines[1])["detail"]
