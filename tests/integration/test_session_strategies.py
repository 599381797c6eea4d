"""Sessions with strategies, pinned facts, the inflation guard and the loop breaker, on
SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine.clearing import CLEARED_RESULT_PREFIX
from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.engine.extractive.summarizer import ExtractiveSummarizer
from app.engine.ports import SummarizerInfo, SummaryRequest, SummaryResult
from app.main import create_app
from app.settings import Settings
from tests.conftest import BIG_ANTHROPIC, CLAUDE_CODE, load_json
from tests.fidelity_scenario import ForgetfulSummarizer
from tests.integration.test_clearing import results, text_of, tool_uses

PIN = "The staging database listens on port 5433."


class CountingSummarizer:
    """The extractive summarizer, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self._inner = ExtractiveSummarizer()

    @property
    def info(self) -> SummarizerInfo:
        return self._inner.info

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        return await self._inner.summarize(request)


def _app(url: str, summarizer: Any = None) -> TestClient:
    return TestClient(create_app(Settings(database_url=url), summarizer=summarizer))


@pytest.fixture
def settings(database_url: str) -> Settings:
    """The `client` of this module serves each store backend."""
    return Settings(database_url=database_url)


def _session(client: TestClient, **settings: Any) -> str:
    created = client.post("/sessions", json=settings)
    assert created.status_code == 201, created.text
    sid: str = created.json()["id"]
    return sid


def _append(client: TestClient, sid: str, messages: list[dict[str, Any]]) -> None:
    appended = client.post(f"/sessions/{sid}/messages", json={"messages": messages})
    assert appended.status_code == 200, appended.text


def test_a_clearing_session_keeps_the_originals_and_rebuilds_placeholders(
    client: TestClient,
) -> None:
    doc = load_json(CLAUDE_CODE / "tool_heavy.anthropic.json")
    sid = _session(
        client,
        model=doc["model"],
        trigger_tokens=1_500,
        keep_recent_tokens=300,
        strategy="clear_tool_results",
        clear={"keep": 1, "exclude_tools": ["Bash"]},
    )
    session = client.get(f"/sessions/{sid}").json()
    assert session["strategy"] == "clear_tool_results" and session["clear"]["keep"] == 1
    _append(client, sid, doc["messages"])
    prepared = client.post(f"/sessions/{sid}/prepare").json()
    assert prepared["compacted"], prepared["reason"]
    record = prepared["compaction"]
    assert record["strategy"] == "clear_tool_results"
    assert record["applied"] == ["clear_tool_results"]
    assert record["summary"] == "" and record["first_kept_seq"] == 0
    assert record["summarizer"]["provider"] == "none" and record["summarizer"]["attempts"] == 0
    assert record["tokens_after"] < record["tokens_before"]
    cleared = {c["tool_call_id"]: c["placeholder"] for c in record["cleared_tool_uses"]}
    assert cleared

    # The context is the transcript with placeholders; the transcript is untouched.
    context = client.get(f"/sessions/{sid}/context").json()
    assert len(context["messages"]) == len(doc["messages"])
    assert tool_uses(context["messages"]) == tool_uses(doc["messages"])
    for call_id, content in results(context["messages"]).items():
        if call_id in cleared:
            assert text_of(content) == cleared[call_id]
        else:
            assert content == results(doc["messages"])[call_id]
    names = dict(tool_uses(doc["messages"]))
    assert not any(names[call_id] == "Bash" for call_id in cleared)
    transcript = client.get(f"/sessions/{sid}/transcript").json()
    assert transcript["messages"] == doc["messages"]
    assert context["estimate"]["tokens"] == record["tokens_after"]

    # A summary later on keeps the placeholders of the tool uses it keeps verbatim.
    summarized = client.post(f"/sessions/{sid}/compact", json={"strategy": "summarize"}).json()
    second = summarized["compaction"]
    assert second["applied"] == ["summarize"] and second["previous_id"] == record["id"]
    context = client.get(f"/sessions/{sid}/context").json()
    assert context["messages"][0]["content"].startswith(SUMMARY_MARKER_PREFIX)
    kept = results(context["messages"])
    still = {c["tool_call_id"]: c["placeholder"] for c in second["cleared_tool_uses"]}
    assert set(still) == set(cleared) & set(kept) and still
    for call_id, placeholder in still.items():
        assert text_of(kept[call_id]) == placeholder


def test_auto_sessions_clear_and_summarize_a_real_transcript_in_batches(
    database_url: str,
) -> None:
    body = load_json(BIG_ANTHROPIC)
    messages = body["messages"]
    with _app(database_url) as client:
        sid = _session(
            client,
            model=body["model"],
            trigger_tokens=30_000,
            keep_recent_tokens=8_000,
            strategy="auto",
        )
        applied: list[list[str]] = []
        for start in range(0, len(messages), 40):
            _append(client, sid, messages[start : start + 40])
            prepared = client.post(f"/sessions/{sid}/prepare").json()
            if prepared["compacted"]:
                applied.append(prepared["compaction"]["applied"])
                assert prepared["compaction"]["strategy"] == "auto"
            tokens = prepared["context"]["estimate"]["tokens"]
            assert tokens <= 30_000 or prepared["compaction_ineffective"]
        assert ["clear_tool_results"] in applied
        # Clearing moves in cache-aware steps (COMPACTOR_CLEARING): over the threshold with
        # no whole step ready, `auto` summarizes alone, so a batch summarizes with or
        # without clearing first.
        assert any("summarize" in steps for steps in applied)
        transcript = client.get(f"/sessions/{sid}/transcript", params={"limit": 5000}).json()
        assert transcript["messages"] == messages
        context = client.get(f"/sessions/{sid}/context").json()["messages"]
        assert any(text_of(c).startswith(CLEARED_RESULT_PREFIX) for c in results(context).values())
        calls = {call_id for call_id, _ in tool_uses(context)}
        assert set(results(context)) <= calls  # no result without its call


def test_pinned_facts_are_restored_and_recorded(database_url: str) -> None:
    with _app(database_url, summarizer=ForgetfulSummarizer()) as client:
        sid = _session(client, keep_recent_tokens=200, pinned=[PIN])
        assert client.get(f"/sessions/{sid}").json()["pinned"] == [PIN]
        filler = "The parser reads tokens one by one and builds the tree. " * 30
        _append(
            client,
            sid,
            [
                {"role": "user", "content": f"Fix the parser. Never touch `gen/`. {filler}"},
                {
                    "role": "assistant",
                    "content": filler,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "Read", "arguments": '{"file_path": "p.py"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": filler},
                {"role": "assistant", "content": "Now the edit. " + filler},
                {"role": "user", "content": "Then run the tests."},
                {"role": "assistant", "content": "Running them. " + filler},
            ],
        )
        out = client.post(f"/sessions/{sid}/compact", json={}).json()
        record = out["compaction"]
        kinds = {(f["kind"], f["text"]) for f in record["restored_facts"]}
        assert ("pinned", PIN) in kinds
        assert ("constraint", "Never touch `gen/`.") in kinds
        assert ("file_read", "p.py") in kinds
        assert PIN in record["summary"] and "Never touch `gen/`." in record["summary"]
        # The cut fell inside the last turn: its request is named, and the summary holds it
        # (restored into the Goal, so it is not quoted a second time).
        assert record["current_request"] == "Then run the tests."
        assert ("goal", "Then run the tests.") in kinds
        assert "- Then run the tests." in record["summary"]
        listed = client.get(f"/sessions/{sid}/compactions").json()["compactions"]
        assert listed[0]["restored_facts"] == record["restored_facts"]


def test_a_compaction_that_would_grow_the_history_is_refused_and_stores_nothing(
    client: TestClient,
) -> None:
    sid = _session(client, keep_recent_tokens=5)
    _append(client, sid, [{"role": "user", "content": "hi"}, {"role": "user", "content": "go"}])
    before = client.get(f"/sessions/{sid}/context").json()
    refused = client.post(f"/sessions/{sid}/compact", json={"reason": "manual"})
    assert refused.status_code == 409
    problem = refused.json()
    assert problem["type"].endswith("/compaction-ineffective")
    assert "not below" in problem["detail"]
    assert refused.headers["content-type"] == "application/problem+json"
    assert client.get(f"/sessions/{sid}/compactions").json()["compactions"] == []
    assert client.get(f"/sessions/{sid}/context").json() == before

    stateless = client.post(
        "/compact", json={"messages": before["messages"], "force": True, "keep_recent_tokens": 5}
    )
    assert stateless.status_code == 409
    assert stateless.json()["type"].endswith("/compaction-ineffective")


def test_prepare_says_when_compaction_cannot_help_and_waits_for_new_entries(
    database_url: str,
) -> None:
    counting = CountingSummarizer()
    with _app(database_url, summarizer=counting) as client:
        sid = _session(client, trigger_tokens=1_500, keep_recent_tokens=500)
        log = "log line with details about the outage in the eu-west region\n" * 300
        _append(
            client,
            sid,
            [
                {"role": "user", "content": "Start: summarize the incident report."},
                {"role": "assistant", "content": "Here is what I found so far. " * 80},
                {"role": "user", "content": f"Here is the full incident log:\n{log}"},
            ],
        )
        first = client.post(f"/sessions/{sid}/prepare").json()
        assert first["compaction_ineffective"] is True
        assert "threshold of 1,500" in first["warning"]
        assert first["context"]["estimate"]["tokens"] > 1_500
        calls = counting.calls

        # No new entries: it does not try again, and says so.
        for _ in range(3):
            again = client.post(f"/sessions/{sid}/prepare").json()
            assert again["compacted"] is False and again["compaction_ineffective"] is True
            assert "until new messages arrive" in again["reason"]
            assert again["warning"]
        assert counting.calls == calls
        records = client.get(f"/sessions/{sid}/compactions").json()["compactions"]

        # New material moves the cut past the big entry: compaction works again.
        _append(
            client,
            sid,
            [
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "content": "Next: draft the postmortem. " * 40},
                {"role": "assistant", "content": "Drafting it now. " * 40},
            ],
        )
        after = client.post(f"/sessions/{sid}/prepare").json()
        assert after["compacted"] is True and after["compaction_ineffective"] is False
        assert after["warning"] is None
        assert after["context"]["estimate"]["tokens"] <= 1_500
        assert counting.calls == calls + 1
        newer = client.get(f"/sessions/{sid}/compactions").json()["compactions"]
        assert len(newer) == len(records) + 1
