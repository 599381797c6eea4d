"""The Python clients (sync and async) on search, preview, revert, fork, settings changes,
export and import, against a real service."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from context_compactor import AsyncCompactorClient, CompactorAPIError, CompactorClient


def _turns(n: int, tag: str = "") -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"turn {i}{tag}: " + "we keep working on the parser module. " * 8,
        }
        for i in range(n)
    ]


def test_the_sync_client_drives_every_recall_and_control_call(compactor_url: str) -> None:
    with CompactorClient(compactor_url) as client:
        session = client.create_session(trigger_tokens=600, keep_recent_tokens=200)
        planted = {"role": "assistant", "content": "The release codename is HALIBUT."}
        client.append_messages(session.id, [*_turns(5), planted, *_turns(24, " b")])
        preview = client.prepare(session.id, dry_run=True)
        assert preview.dry_run and preview.compaction is not None
        assert preview.folded is not None and preview.folded.from_seq == 0
        assert client.compactions(session.id) == []
        manual = client.compact_session(session.id, dry_run=True)
        assert manual.dry_run and client.compactions(session.id) == []
        done = client.prepare(session.id)
        assert done.compacted and not done.dry_run and done.compaction is not None
        found = client.search(session.id, "codename", limit=5, folded_only=True)
        assert found.match == "all" and [h.seq for h in found.hits] == [5]
        assert found.hits[0].folded and "**codename**" in found.hits[0].snippet
        reverted = client.revert(session.id, done.compaction.id)
        assert reverted.compaction.trigger == "revert"
        assert reverted.compaction.reverted_id == done.compaction.id
        assert "HALIBUT" in str(reverted.context.messages)
        fork = client.fork(session.id, at_seq=5)
        assert fork.id != session.id and fork.message_count == 6
        changed = client.update_session(
            session.id, keep_recent_tokens=150, thinking=None, prepare_ahead_ratio="off"
        )
        assert changed.keep_recent_tokens == 150 and changed.prepare_ahead_ratio == "off"
        [change] = client.settings_changes(session.id)
        assert change.via == "api" and change.changes["keep_recent_tokens"]["after"] == 150
        assert change.changes["prepare_ahead_ratio"] == {"before": None, "after": "off"}
        bundle = client.export_session(session.id)
        assert bundle.endswith(b"\n") and b'"type":"trailer"' in bundle
        restored = client.import_session(bundle)
        assert restored.id != session.id and restored.message_count == 30
        assert (
            client.transcript(restored.id).raw["messages"]
            == (client.transcript(session.id).raw["messages"])
        )
        with pytest.raises(CompactorAPIError) as cut:
            client.import_session(bundle[:-10])
        assert cut.value.status == 422
        with pytest.raises(CompactorAPIError) as bad:
            client.search(session.id, '"unclosed')
        assert bad.value.status == 400 and "quote" in bad.value.detail


def test_the_async_client_drives_the_same_calls(compactor_url: str) -> None:
    async def run() -> None:
        async with AsyncCompactorClient(compactor_url) as client:
            session = await client.create_session(trigger_tokens=600, keep_recent_tokens=200)
            await client.append_messages(session.id, _turns(30))
            assert (await client.prepare(session.id, dry_run=True)).dry_run
            done = await client.compact_session(session.id)
            assert done.compaction is not None
            hits = (await client.search(session.id, "parser")).hits
            assert hits and hits[0].rank == 1
            reverted = await client.revert(session.id, done.compaction.id)
            assert reverted.compaction.trigger == "revert"
            fork = await client.fork(session.id, at_seq=3)
            assert fork.message_count == 4
            await client.update_session(session.id, model="gpt-4o")
            assert len(await client.settings_changes(session.id)) == 1
            bundle = await client.export_session(session.id)
            restored = await client.import_session(bundle)
            assert restored.compaction_count == 2

    asyncio.run(run())
