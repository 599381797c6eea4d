"""`compactor export SESSION -o file.jsonl` and `compactor import file.jsonl`: a session
moved between two deployments' stores through a file, and a cut file refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from app.cli import app
from app.main import create_app
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry
from tests.conftest import migrated_copy
from tests.integration.test_session_control import conversation

runner = CliRunner()


def test_export_then_import_moves_a_session_between_stores(
    tmp_path: Path,
    migrated_sqlite: Path,
    tokenizers: TokenizerRegistry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = migrated_copy(migrated_sqlite, tmp_path, "source.db")
    target = migrated_copy(migrated_sqlite, tmp_path, "target.db")
    with TestClient(create_app(Settings(database_url=source), tokenizers=tokenizers)) as client:
        sid = client.post(
            "/sessions", json={"trigger_tokens": 600, "keep_recent_tokens": 200}
        ).json()["id"]
        client.post(f"/sessions/{sid}/messages", json={"messages": conversation(16)})
        client.post(f"/sessions/{sid}/compact", json={})
        transcript = client.get(f"/sessions/{sid}/transcript?limit=100").content
    bundle = tmp_path / "session.jsonl"
    monkeypatch.setenv("COMPACTOR_DATABASE_URL", source)
    exported = runner.invoke(app, ["export", sid, "-o", str(bundle)])
    assert exported.exit_code == 0, exported.output
    assert bundle.read_bytes().count(b"\n") == 1 + 16 + 1 + 1
    missing = runner.invoke(app, ["export", "nope", "-o", str(tmp_path / "x.jsonl")])
    assert missing.exit_code == 1 and "nope" in missing.output
    assert not (tmp_path / "x.jsonl").exists()

    monkeypatch.setenv("COMPACTOR_DATABASE_URL", target)
    imported = runner.invoke(app, ["import", str(bundle)])
    assert imported.exit_code == 0, imported.output
    new_id = imported.stdout.strip().splitlines()[0]
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(bundle.read_bytes()[:-40])
    refused = runner.invoke(app, ["import", str(cut)])
    assert refused.exit_code == 1 and "nothing was imported" in refused.output
    with TestClient(create_app(Settings(database_url=target), tokenizers=tokenizers)) as client:
        assert client.get(f"/sessions/{new_id}/transcript?limit=100").content == transcript
        assert client.get(f"/sessions/{new_id}").json()["compaction_count"] == 1
        assert client.get("/sessions").json()["total"] == 1
