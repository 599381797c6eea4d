"""The fields the client had drifted from, read back from a running service."""

from __future__ import annotations

from typing import Any

from context_compactor import ClearedToolUse, CompactorClient, RestoredFact


def tool_turns(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for i in range(n):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "read", "arguments": "{}"},
        }
        messages += [
            {"role": "user", "content": f"read src/m{i}.py and fix it " * 60},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{i}", "content": "x = 1\n" * 400},
            {"role": "assistant", "content": f"fixed m{i} " * 60},
        ]
    return messages


def test_strategy_clear_and_pinned_on_compact(compactor_url: str) -> None:
    with CompactorClient(compactor_url) as compactor:
        cleared = compactor.compact(
            tool_turns(8),
            model="gpt-4o",
            force=True,
            strategy="clear_tool_results",
            clear={"keep": 2, "exclude_tools": ["write"]},
        )
        assert cleared.strategy == "clear_tool_results"
        assert cleared.applied == ["clear_tool_results"] and cleared.tokens_cleared > 0
        assert all(isinstance(c, ClearedToolUse) for c in cleared.cleared_tool_uses)
        assert [c.tool_call_id for c in cleared.cleared_tool_uses] == [
            f"call_{i}" for i in range(6)
        ]
        assert cleared.threshold > 0

        pinned = "the deploy key lives in vault, never in the repo"
        summarized = compactor.compact(
            tool_turns(8), model="gpt-4o", force=True, keep_recent_tokens=1500, pinned=[pinned]
        )
        assert summarized.applied == ["summarize"] and summarized.summary is not None
        assert pinned in summarized.summary
        assert all(isinstance(r, RestoredFact) for r in summarized.restored_facts)
        assert summarized.summarizer is not None and summarized.summarizer.chunks >= 1


def test_session_settings_and_records_carry_the_new_fields(compactor_url: str) -> None:
    with CompactorClient(compactor_url) as compactor:
        session = compactor.create_session(
            model="gpt-4o",
            format="openai",
            trigger_tokens=2_000,
            keep_recent_tokens=1_000,
            strategy="auto",
            clear={"keep": 1},
            pinned=["use tabs"],
        )
        assert (session.strategy, session.pinned) == ("auto", ["use tabs"])
        assert session.clear is not None and session.clear.keep == 1
        compactor.append_messages(session.id, tool_turns(6))
        prepared = compactor.prepare(session.id)
        assert prepared.compacted and prepared.compaction is not None
        assert prepared.compaction.strategy == "auto"
        # The kept tail (1,000 tokens back, widened to whole tool pairs) is still over the
        # 2,000-token threshold: the service says so instead of compacting in a loop.
        assert prepared.compaction_ineffective is True
        assert prepared.warning is not None and "keep_recent_tokens" in prepared.warning
        compactor.append_messages(session.id, tool_turns(3))
        manual = compactor.compact_session(session.id, strategy="summarize")
        assert manual.compaction is not None and manual.compaction.strategy == "summarize"
        assert [r.strategy for r in compactor.compactions(session.id)] == ["auto", "summarize"]


def test_a_responses_session_reads_back_its_items(compactor_url: str) -> None:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": "hello"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
    ]
    with CompactorClient(compactor_url) as compactor:
        session = compactor.create_session(format="responses")
        assert session.format == "responses"
        compactor.append_messages(session.id, items)
        context = compactor.context(session.id)
        assert context.format == "responses" and context.messages == items
