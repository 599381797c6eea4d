"""No thrash in sessions (issue 22.5): an automatic compaction that would leave the context
over the threshold cuts deeper once (summarizes more, keeps less); if even that cannot
bring it under, it says so once (`over_threshold` in the compaction log, the warning of
`prepare`) and never makes the same summarizer call twice on the same base. Counted with
a counting summarizer, on SQLite and PostgreSQL."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from app.engine.ports import SummaryRequest, SummaryResult
from tests.integration.test_session_strategies import (
    CountingSummarizer,
    _app,
    _append,
    _session,
)


def words(label: str, count: int) -> str:
    return " ".join(f"{label}{i}" for i in range(count))


def turns(count: int, size: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for i in range(count):
        history.append({"role": "user", "content": f"Step {i}: " + words(f"u{i}x", size)})
        history.append({"role": "assistant", "content": f"Done {i}. " + words(f"a{i}x", size)})
    return history


class InflatingSummarizer(CountingSummarizer):
    """Counts its calls and writes summaries longer than what they summarize."""

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        return SummaryResult(text="## Goal\n" + words("filler", 4_000))


class FixedSummarizer(CountingSummarizer):
    """Counts its calls and answers with a summary of about a thousand tokens."""

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        return SummaryResult(text="## Goal\n" + words("fact", 300))


def compaction_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The `compaction` lines of the compaction log (their fields are record attributes)."""
    return [r for r in caplog.records if r.name == "compactor.compaction" and r.msg == "compaction"]


def test_a_cut_that_keeps_too_much_is_made_deeper_before_the_summary(database_url: str) -> None:
    fixed = FixedSummarizer()
    with _app(database_url, summarizer=fixed) as client:
        # keep_recent_tokens over the threshold: the tail it keeps is over it alone.
        sid = _session(client, trigger_tokens=3_000, keep_recent_tokens=3_500)
        huge = {"role": "user", "content": "The whole log: " + words("h", 800)}
        _append(client, sid, [*turns(4, 40), huge, *turns(4, 60)])
        prepared = client.post(f"/sessions/{sid}/prepare").json()
        assert prepared["compacted"] is True and prepared["compaction_ineffective"] is False
        assert prepared["context"]["estimate"]["tokens"] <= 3_000
        # One summarizer call: the deeper cut was chosen before it, not after a wasted one.
        assert fixed.calls == 1
        records = client.get(f"/sessions/{sid}/compactions").json()["compactions"]
        # The huge message was folded: the cut is past it.
        assert len(records) == 1 and records[0]["first_kept_seq"] > 8


def test_a_summary_that_leaves_it_over_is_made_once_more_on_a_deeper_cut(
    database_url: str,
) -> None:
    fixed = FixedSummarizer()
    with _app(database_url, summarizer=fixed) as client:
        sid = _session(client, trigger_tokens=4_000, keep_recent_tokens=3_000)
        big = [
            {"role": "user", "content": "Now read the log: " + words("log", 200)},
            {"role": "assistant", "content": "Read it. " + words("ans", 200)},
        ]
        _append(client, sid, [*turns(10, 40), *big])
        prepared = client.post(f"/sessions/{sid}/prepare").json()
        assert prepared["compacted"] is True and prepared["compaction_ineffective"] is False
        assert prepared["context"]["estimate"]["tokens"] <= 4_000
        # The first summary and the 3,000 tokens kept were over what it had: one more call
        # on a deeper cut (never the same call twice), and the record holds the deeper one.
        assert fixed.calls == 2
        records = client.get(f"/sessions/{sid}/compactions").json()["compactions"]
        assert len(records) == 1 and records[0]["first_kept_seq"] >= 14


def test_a_context_that_cannot_fit_says_so_once_and_never_repeats_the_call(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    counting = CountingSummarizer()
    caplog.set_level(logging.INFO, logger="compactor.compaction")
    with _app(database_url, summarizer=counting) as client:
        sid = _session(client, trigger_tokens=1_500, keep_recent_tokens=500)
        huge = {"role": "user", "content": "The whole log: " + words("line", 3_000)}
        _append(client, sid, [*turns(3, 150), huge])
        first = client.post(f"/sessions/{sid}/prepare").json()
        # Summarized once (the huge message cannot be cut deeper), and said so.
        assert counting.calls == 1
        assert first["compacted"] is True and first["compaction_ineffective"] is True
        assert "cannot bring the context under the threshold" in first["warning"]
        lines = compaction_lines(caplog)
        assert lines and lines[-1].over_threshold is True
        # New entries that cannot move the cut: no summarizer call, the same warning.
        for reply in ["Noted.", "Still reading."]:
            _append(client, sid, [{"role": "assistant", "content": reply}])
            again = client.post(f"/sessions/{sid}/prepare").json()
            assert again["compacted"] is False and again["compaction_ineffective"] is True
            assert again["warning"]
        assert counting.calls == 1
        assert len(client.get(f"/sessions/{sid}/compactions").json()["compactions"]) == 1


def test_an_ineffective_summary_is_not_asked_for_again_on_the_same_base(
    database_url: str,
) -> None:
    inflating = InflatingSummarizer()
    with _app(database_url, summarizer=inflating) as client:
        sid = _session(client, trigger_tokens=1_500, keep_recent_tokens=500)
        huge = {"role": "user", "content": "The whole log: " + words("line", 3_000)}
        _append(client, sid, [*turns(3, 150), huge])
        first = client.post(f"/sessions/{sid}/prepare").json()
        assert first["compacted"] is False and first["compaction_ineffective"] is True
        assert inflating.calls == 1
        # A new entry after the huge one leaves the cut where it was: the same messages
        # would be summarized into the same too-long summary, so they are not.
        _append(client, sid, [{"role": "assistant", "content": "Noted."}])
        again = client.post(f"/sessions/{sid}/prepare").json()
        assert again["compacted"] is False and again["compaction_ineffective"] is True
        assert "same messages" in again["reason"]
        assert inflating.calls == 1
        assert client.get(f"/sessions/{sid}/compactions").json()["compactions"] == []
