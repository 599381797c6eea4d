"""Anthropic prompt-cache breakpoints on a rewritten request (SPEC §15, issue 22.2): the
caller's current breakpoints only, one after the summary, never more than 4."""

from __future__ import annotations

import copy
from typing import Any

from app.formats.anthropic import breakpoint_count, without_cache_breakpoints
from app.formats.apis.messages_cache import MAX_BREAKPOINTS, with_cache_breakpoints
from app.formats.registry import FORMATS

MARK: dict[str, Any] = {"type": "ephemeral"}
HOUR: dict[str, Any] = {"type": "ephemeral", "ttl": "1h"}
SUMMARY = {"role": "user", "content": "[Context summary: compacted]\n\nThe goal was X."}


def user(text: str, mark: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if mark is not None:
        block["cache_control"] = mark
    return {"role": "user", "content": [block]}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def claude_code(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """Claude Code's placement: both system blocks and the last message marked."""
    return {
        "model": "claude-sonnet-4-5",
        "system": [
            {"type": "text", "text": "You are Claude Code.", "cache_control": MARK},
            {"type": "text", "text": "Work carefully.", "cache_control": MARK},
        ],
        "messages": messages,
        **extra,
    }


def total(body: dict[str, Any]) -> int:
    top = 1 if isinstance(body.get("cache_control"), dict) else 0
    return top + sum(breakpoint_count(body.get(k)) for k in ("tools", "system", "messages"))


def test_stored_breakpoints_are_left_behind_and_the_callers_current_ones_applied() -> None:
    # A session's context: every stored user message was the last one once, and marked.
    stored = [user("one", MARK), assistant("a"), user("two", MARK), assistant("b")]
    context = without_cache_breakpoints([*stored, user("three", MARK)])
    # The caller rebuilds its breakpoints every turn: only its last message has one now.
    sent = claude_code([*without_cache_breakpoints(stored), user("three", MARK)])
    forwarded = with_cache_breakpoints(sent, {**sent, "messages": context}, None)
    assert total(forwarded) == 3
    assert forwarded["messages"][-1] == user("three", MARK)
    assert all(breakpoint_count(m) == 0 for m in forwarded["messages"][:-1])


def test_the_summary_gets_a_breakpoint_when_there_is_room() -> None:
    sent = claude_code([user("old", MARK), assistant("a"), user("new", MARK)])
    forwarded = with_cache_breakpoints(sent, {**sent, "messages": [SUMMARY, user("new", MARK)]}, 0)
    summary = forwarded["messages"][0]
    assert summary["content"] == [
        {"type": "text", "text": SUMMARY["content"], "cache_control": MARK}
    ]
    assert total(forwarded) == MAX_BREAKPOINTS
    # Deterministic: the same bytes on every turn until the next compaction.
    again = with_cache_breakpoints(sent, {**sent, "messages": [SUMMARY, user("new", MARK)]}, 0)
    assert again == forwarded


def test_no_summary_breakpoint_without_room_or_without_caching() -> None:
    full = claude_code(
        [user("x"), assistant("a"), user("new", MARK)],
        tools=[{"name": "t", "input_schema": {}, "cache_control": MARK}],
    )
    forwarded = with_cache_breakpoints(full, {**full, "messages": [SUMMARY, user("new", MARK)]}, 0)
    assert forwarded["messages"][0] == SUMMARY and total(forwarded) == MAX_BREAKPOINTS
    plain = {"model": "m", "messages": [user("x"), assistant("a"), user("new")]}
    forwarded = with_cache_breakpoints(plain, {**plain, "messages": [SUMMARY, user("new")]}, 0)
    assert forwarded["messages"][0] == SUMMARY


def test_the_summary_breakpoint_takes_the_ttl_after_it() -> None:
    sent = claude_code([user("old"), assistant("a"), user("new", HOUR)])
    forwarded = with_cache_breakpoints(sent, {**sent, "messages": [SUMMARY, user("new", HOUR)]}, 0)
    assert forwarded["messages"][0]["content"][0]["cache_control"] == HOUR
    automatic = {"model": "m", "cache_control": HOUR, "messages": [user("x"), user("new")]}
    forwarded = with_cache_breakpoints(
        automatic, {**automatic, "messages": [SUMMARY, user("new")]}, 0
    )
    assert forwarded["messages"][0]["content"][0]["cache_control"] == HOUR


def test_never_more_than_four_the_oldest_message_breakpoints_go_first() -> None:
    messages = [user(f"m{i}", MARK) if i % 2 == 0 else assistant(f"a{i}") for i in range(7)]
    sent = claude_code(messages)
    assert total(sent) == 6
    forwarded = with_cache_breakpoints(sent, {**sent, "messages": list(messages)}, None)
    assert total(forwarded) == MAX_BREAKPOINTS
    kept = [i for i, m in enumerate(forwarded["messages"]) if breakpoint_count(m)]
    assert kept == [4, 6]


def test_nothing_changes_when_nothing_needs_to() -> None:
    sent = claude_code([user("one"), assistant("a"), user("two", MARK)])
    forwarded = {**sent, "messages": list(sent["messages"])}
    assert with_cache_breakpoints(sent, forwarded, None) is forwarded


def test_breakpoints_nested_in_tool_results_are_stripped_and_inputs_untouched() -> None:
    result = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [{"type": "text", "text": "out", "cache_control": MARK}],
            }
        ],
    }
    original = copy.deepcopy(result)
    (stripped,) = FORMATS.get("anthropic").without_cache_breakpoints([result])
    assert breakpoint_count(stripped) == 0 and result == original
    plain = assistant("a")
    assert FORMATS.get("anthropic").without_cache_breakpoints([plain])[0] is plain
