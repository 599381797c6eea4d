"""Migration 0007 backfills the search index of sessions stored before it: a store
written at 0006 is searchable after the upgrade, tool results by their tool's name."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.store.migrate import downgrade, upgrade
from app.tokenizers.bpe import TokenizerRegistry

TOOL_TURN = [
    {"role": "user", "content": "Which port does staging listen on?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_config", "arguments": '{"path": "staging.toml"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "listen_port = 8443"},
]


def test_sessions_stored_before_the_migration_are_searchable_after_it(
    database_url: str, tokenizers: TokenizerRegistry
) -> None:
    settings = Settings(database_url=database_url, auto_migrate=False)
    with TestClient(create_app(settings, tokenizers=tokenizers)) as client:
        sid = client.post("/sessions", json={}).json()["id"]
        client.post(f"/sessions/{sid}/messages", json={"messages": TOOL_TURN})
    # Back to the schema before search (the index and search_text are gone), then up.
    downgrade(database_url, "0008_leases")
    upgrade(database_url)
    with TestClient(create_app(settings, tokenizers=tokenizers)) as client:
        hits = client.get(f"/sessions/{sid}/search", params={"q": "read_config"}).json()
        assert {h["seq"] for h in hits["hits"]} == {1, 2}
        port = client.get(f"/sessions/{sid}/search", params={"q": "8443"}).json()["hits"]
        assert [h["seq"] for h in port] == [2]
        # New appends are indexed as before.
        more = [{"role": "assistant", "content": "Staging listens on 8443, behind nginx."}]
        client.post(f"/sessions/{sid}/messages", json={"messages": more})
        assert [
            h["seq"]
            for h in client.get(f"/sessions/{sid}/search", params={"q": "nginx"}).json()["hits"]
        ] == [3]
