"""The user in control (SPEC §17): preview (dry_run writes nothing), revert (a new record,
later compactions rebase on it), fork (nothing mutable shared), PATCH (recorded, used by
the next prepare), on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.settings import Settings
from app.store.database import create_db_engine
from app.store.models import Base


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url)


def every_row(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, to compare before and after."""
    engine = create_db_engine(url)
    try:
        with engine.connect() as db:
            return {
                table.name: sorted(
                    tuple(str(v) for v in row) for row in db.execute(select(table)).all()
                )
                for table in Base.metadata.sorted_tables
            }
    finally:
        engine.dispose()


def conversation(n: int, tag: str = "") -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"turn {i}{tag}: " + "we keep working on the parser module. " * 8,
        }
        for i in range(n)
    ]


def _session(client: TestClient, n: int = 30, **settings: Any) -> str:
    body = {"trigger_tokens": 600, "keep_recent_tokens": 200, **settings}
    sid: str = client.post("/sessions", json=body).json()["id"]
    client.post(f"/sessions/{sid}/messages", json={"messages": conversation(n)})
    return sid


def test_dry_run_prepare_and_compact_preview_and_write_nothing(
    client: TestClient, database_url: str
) -> None:
    sid = _session(client)
    before = every_row(database_url)
    preview = client.post(f"/sessions/{sid}/prepare", json={"dry_run": True})
    assert preview.status_code == 200, preview.text
    body = preview.json()
    assert body["dry_run"] is True and body["compacted"] is True
    record = body["compaction"]
    assert record["id"] == "dry-run" and record["summary"]
    assert record["tokens_after"] < record["tokens_before"]
    folded = body["folded"]
    assert folded["from_seq"] == 0 and folded["to_seq"] == record["first_kept_seq"] - 1
    manual = client.post(f"/sessions/{sid}/compact", json={"dry_run": True}).json()
    assert manual["dry_run"] is True and manual["compaction"]["trigger"] == "manual"
    assert every_row(database_url) == before
    assert client.get(f"/sessions/{sid}/compactions").json()["compactions"] == []
    # The real prepare then does what the preview showed.
    real = client.post(f"/sessions/{sid}/prepare").json()
    assert real["compacted"] and real["dry_run"] is False
    assert real["compaction"]["first_kept_seq"] == record["first_kept_seq"]
    assert real["compaction"]["summary"] == record["summary"]
    assert real["context"]["messages"] == body["context"]["messages"]


def test_revert_restores_the_context_before_and_later_compactions_rebase(
    client: TestClient,
) -> None:
    sid = _session(client)
    original = client.get(f"/sessions/{sid}/context").json()
    first = client.post(f"/sessions/{sid}/compact", json={}).json()["compaction"]
    reverted = client.post(f"/sessions/{sid}/compactions/{first['id']}/revert")
    assert reverted.status_code == 200, reverted.text
    body = reverted.json()
    record = body["compaction"]
    assert record["trigger"] == "revert" and record["reverted_id"] == first["id"]
    assert record["previous_id"] == first["id"]
    assert body["context"]["messages"] == original["messages"]
    assert client.get(f"/sessions/{sid}/context").json()["messages"] == original["messages"]
    records = client.get(f"/sessions/{sid}/compactions").json()["compactions"]
    assert [r["trigger"] for r in records] == ["manual", "revert"]
    # The next compaction builds on the revert record: a fresh summary, not an update
    # of the reverted one, chained after the revert.
    client.post(f"/sessions/{sid}/messages", json={"messages": conversation(4, " later")})
    again = client.post(f"/sessions/{sid}/compact", json={}).json()["compaction"]
    assert again["previous_id"] == record["id"]
    context = client.get(f"/sessions/{sid}/context").json()
    assert "later" in str(context["messages"][-1])
    missing = client.post(f"/sessions/{sid}/compactions/nope/revert")
    assert missing.status_code == 404
    assert missing.json()["type"].endswith("compaction-not-found")


def test_fork_copies_a_prefix_and_shares_nothing_mutable(client: TestClient) -> None:
    sid = _session(client, n=30)
    client.post(f"/sessions/{sid}/compact", json={})
    forked = client.post(f"/sessions/{sid}/fork", json={"at_seq": 29})
    assert forked.status_code == 201, forked.text
    fork = forked.json()
    assert fork["id"] != sid and fork["message_count"] == 30
    assert fork["metadata"]["forked_from"] == {"session_id": sid, "at_seq": 29}
    assert fork["compaction_count"] == 1
    # The same context, but the summary's recall line names the fork, not its source.
    fork_context = client.get(f"/sessions/{fork['id']}/context").json()["messages"]
    source_context = client.get(f"/sessions/{sid}/context").json()["messages"]
    assert fork["id"] in fork_context[0]["content"] and sid not in fork_context[0]["content"]
    assert json.dumps(fork_context).replace(fork["id"], sid) == json.dumps(source_context)
    # Appending, compacting or changing either one leaves the other as it was.
    client.post(f"/sessions/{fork['id']}/messages", json={"messages": conversation(2, " fork")})
    client.patch(f"/sessions/{fork['id']}", json={"keep_recent_tokens": 50})
    assert client.get(f"/sessions/{sid}").json()["message_count"] == 30
    assert client.get(f"/sessions/{sid}").json()["keep_recent_tokens"] == 200
    fork_records = client.get(f"/sessions/{fork['id']}/compactions").json()["compactions"]
    source_records = client.get(f"/sessions/{sid}/compactions").json()["compactions"]
    assert {r["id"] for r in fork_records}.isdisjoint(r["id"] for r in source_records)
    # A fork before the compaction's cut holds no record of it.
    early = client.post(f"/sessions/{sid}/fork", json={"at_seq": 3}).json()
    assert early["message_count"] == 4 and early["compaction_count"] == 0
    transcript = client.get(f"/sessions/{early['id']}/transcript").json()["messages"]
    assert transcript == conversation(4)
    bad = client.post(f"/sessions/{sid}/fork", json={"at_seq": 30})
    assert bad.status_code == 422 and "30 entries" in bad.json()["detail"]


def test_patch_changes_settings_records_who_and_when_and_prepare_uses_them(
    client: TestClient,
) -> None:
    sid = _session(client, trigger_tokens=1_000_000)
    assert client.post(f"/sessions/{sid}/prepare").json()["compacted"] is False
    patched = client.patch(
        f"/sessions/{sid}", json={"trigger_tokens": 600, "model": "gpt-4o", "thinking": "low"}
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["trigger_tokens"] == 600 and patched.json()["model"] == "gpt-4o"
    changes = client.get(f"/sessions/{sid}/changes").json()["changes"]
    assert len(changes) == 1
    change = changes[0]
    assert change["changed_by"] == "default" and change["via"] == "api" and change["created_at"]
    assert change["changes"]["trigger_tokens"] == {"before": 1_000_000, "after": 600}
    assert change["changes"]["thinking"] == {"before": None, "after": "low"}
    assert client.post(f"/sessions/{sid}/prepare").json()["compacted"] is True
    # null sets a field back to the default; the same values again record nothing.
    client.patch(f"/sessions/{sid}", json={"thinking": None})
    client.patch(f"/sessions/{sid}", json={"thinking": None})
    assert len(client.get(f"/sessions/{sid}/changes").json()["changes"]) == 2
    refused = client.patch(f"/sessions/{sid}", json={"keep_recent": 5})
    assert refused.status_code == 422 and "keep_recent_tokens" in refused.text


def test_a_sessions_prepare_ahead_ratio_is_stored_shown_changed_and_recorded(
    client: TestClient,
) -> None:
    sid = _session(client, prepare_ahead_ratio=0.5)
    assert client.get(f"/sessions/{sid}").json()["prepare_ahead_ratio"] == 0.5
    patched = client.patch(f"/sessions/{sid}", json={"prepare_ahead_ratio": "off"})
    assert patched.status_code == 200, patched.text
    assert patched.json()["prepare_ahead_ratio"] == "off"
    assert client.get(f"/sessions/{sid}").json()["prepare_ahead_ratio"] == "off"
    client.patch(f"/sessions/{sid}", json={"prepare_ahead_ratio": None})
    assert client.get(f"/sessions/{sid}").json()["prepare_ahead_ratio"] is None
    changes = [c["changes"] for c in client.get(f"/sessions/{sid}/changes").json()["changes"]]
    assert changes == [
        {"prepare_ahead_ratio": {"before": 0.5, "after": "off"}},
        {"prepare_ahead_ratio": {"before": "off", "after": None}},
    ]
    page = client.get(f"/ui/sessions/{sid}").text
    assert "<code>prepare_ahead_ratio</code> 0.5 → off" in page
    # A ratio is of the threshold, in (0, 1]; the only word is `off`.
    for bad in (0, 1.5, -0.2, "on", True):
        refused = client.patch(f"/sessions/{sid}", json={"prepare_ahead_ratio": bad})
        assert refused.status_code == 422, (bad, refused.text)
        created = client.post("/sessions", json={"prepare_ahead_ratio": bad})
        assert created.status_code == 422, (bad, created.text)
    assert client.post("/sessions", json={"prepare_ahead_ratio": 1}).status_code == 201


def test_the_inspector_shows_who_changed_what_and_when(client: TestClient) -> None:
    sid = _session(client)
    page = client.get(f"/ui/sessions/{sid}").text
    assert "Settings changes (0)" in page
    client.patch(f"/sessions/{sid}", json={"keep_recent_tokens": 150, "model": "gpt-4o"})
    page = client.get(f"/ui/sessions/{sid}").text
    assert "Settings changes (1)" in page
    row = page[page.index('class="settings-changes"') :]
    assert "<code>keep_recent_tokens</code> 200 → 150" in row
    assert "<code>model</code> default → gpt-4o" in row
    assert "<td>default</td><td>api</td>" in row
