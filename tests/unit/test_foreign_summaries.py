"""Summaries written by other agents are previous summaries: the update path runs."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.engine.compaction.marker import FOREIGN_SUMMARY_PATTERNS, SummaryMarker
from app.engine.compaction.orchestration import plan_compaction
from app.engine.messages import Block, BlockKind, Message, Role
from app.formats.registry import FORMATS
from app.settings import Settings
from tests.conftest import AUTOCOMPACTED_ANTHROPIC, CLAUDE_CODE, load_json

CONTINUATION_INDEX = 134  # where Claude Code auto-compacted session 4d5611e5


def _after_claude_code_compaction() -> list[dict[str, Any]]:
    """What Claude Code sent after its auto-compaction: its continuation message (the
    transcript's user turn also carries the last tool result before the compaction),
    then the conversation that followed."""
    messages = load_json(AUTOCOMPACTED_ANTHROPIC)["messages"]
    turn = messages[CONTINUATION_INDEX]
    text = next(b["text"] for b in turn["content"] if b.get("type") == "text")
    return [{"role": "user", "content": text}, *messages[CONTINUATION_INDEX + 1 :]]


def _user(text: str) -> Message:
    return Message(role=Role.USER, blocks=(Block(kind=BlockKind.TEXT, text=text),))


def test_claude_code_continuation_in_the_real_transcript_is_a_previous_summary() -> None:
    history = _after_claude_code_compaction()
    conversation = FORMATS.get("anthropic").parse(history)
    plan = plan_compaction(conversation.messages, [100] * len(history), keep_recent_tokens=500)
    assert plan.previous_summary is not None
    assert plan.previous_summary.startswith("Analysis:")
    assert "spotter-dov" in plan.previous_summary
    # The continuation is not summarized again as the conversation's first request.
    assert plan.first_summarized == 1
    assert all("This session is being continued" not in m.text for m in plan.to_summarize)


def test_claude_code_continuation_in_the_openai_form_of_the_transcript() -> None:
    messages = load_json(CLAUDE_CODE / "4d5611e5-241a-462a-8d15-5122611a9569.openai.json")
    history = messages["messages"][138:]  # the continuation is a plain user message here
    conversation = FORMATS.get("openai").parse(history)
    plan = plan_compaction(conversation.messages, [100] * len(history), keep_recent_tokens=500)
    assert plan.previous_summary is not None and plan.previous_summary.startswith("Analysis:")


@pytest.mark.parametrize(
    ("text", "body"),
    [
        (
            "The conversation history before this point was compacted into the following "
            "summary:\n\n<summary>\n## Goal\nShip it\n</summary>",
            "## Goal\nShip it",
        ),
        ("Here is a summary of the conversation to date:\n\n## Goal\nShip it", "## Goal\nShip it"),
        (
            "This session is being continued from a previous conversation that ran out of "
            "context. The conversation is summarized below:\nAnalysis: shipped",
            "Analysis: shipped",
        ),
        ("[Context summary: the conversation before this point was compacted]\n\nours", "ours"),
    ],
)
def test_known_agents_summaries_are_recognized(text: str, body: str) -> None:
    assert SummaryMarker().previous_summary(_user(text)) == body


def test_a_quoted_pattern_later_in_a_message_is_not_a_summary() -> None:
    text = "Please explain: Here is a summary of the conversation to date: what does it mean?"
    assert SummaryMarker().previous_summary(_user(text)) is None


def test_configured_patterns_add_to_the_built_in_ones() -> None:
    marker = SummaryMarker(foreign_patterns=(*FOREIGN_SUMMARY_PATTERNS, r"\[handoff from \w+\]"))
    assert marker.previous_summary(_user("[handoff from aider]\nDid X")) == "Did X"
    assert SummaryMarker().previous_summary(_user("[handoff from aider]\nDid X")) is None


def test_settings_refuse_a_pattern_that_is_not_a_regex() -> None:
    with pytest.raises(ValidationError, match="not a regex"):
        Settings(summary_patterns=["(unclosed"])


def test_compact_updates_a_claude_code_summary_instead_of_taking_it_as_the_goal(
    client: TestClient,
) -> None:
    body = {"messages": _after_claude_code_compaction(), "format": "anthropic", "force": True}
    out = client.post("/compact", json=body).json()
    assert out["compacted"] is True
    summary = out["messages"][0]["content"]
    goal = summary.split("## Goal", 1)[1].split("##", 1)[0]
    assert "This session is being continued" not in goal
    # What Claude Code wrote is carried into the update, not dropped.
    assert "spotter-dov" in summary.split("## Critical Context", 1)[1]
