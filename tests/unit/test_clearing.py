"""Tool-result clearing: which tool uses are cleared, and how wire messages carry it."""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

from app.engine.clearing import (
    CLEARED_RESULT_PREFIX,
    ClearSettings,
    is_cleared_input,
    plan_clearing,
    result_placeholder,
    step_under,
)
from app.formats import anthropic, openai
from app.formats.registry import FORMATS
from app.tokenizers.bpe import CharsPerTokenTokenizer

TOKENIZER = CharsPerTokenTokenizer()
LONG = "line of output that goes on\n" * 100


def openai_history(results: int = 5) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Look at the files."}]
    for i in range(results):
        name = "Bash" if i == 1 else "Read"
        arguments = {"command": "ls -la"} if name == "Bash" else {"file_path": f"src/f{i}.py"}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            }
        )
        messages.append(
            {"role": "tool", "tool_call_id": f"call_{i}", "content": LONG, "x_meta": {"i": i}}
        )
    return messages


def anthropic_history() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Read both."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}},
                {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "b.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": LONG}],
                    "cache_control": {"type": "ephemeral"},
                },
                {"type": "tool_result", "tool_use_id": "t2", "content": LONG, "is_error": True},
                {"type": "text", "text": "and a note"},
            ],
        },
        {"role": "assistant", "content": "Done."},
    ]


def plan_for(messages: list[dict[str, Any]], fmt: str, **settings: Any) -> Any:
    parser = openai if fmt == "openai" else anthropic
    conversation = parser.parse(messages)
    return plan_clearing(conversation.messages, ClearSettings(**settings), TOKENIZER)


def test_all_but_the_newest_tool_uses_are_cleared_and_pairs_stay() -> None:
    messages = openai_history()
    original = copy.deepcopy(messages)
    plan = plan_for(messages, "openai", keep=2)
    assert [c.tool_call_id for c in plan.cleared] == ["call_0", "call_1", "call_2"]
    cleared = FORMATS.get("openai").apply_cleared(messages, plan.cleared)
    assert messages == original  # the input is never modified
    assert len(cleared) == len(messages)
    for old, new in zip(messages, cleared, strict=True):
        if old.get("role") == "tool" and old["tool_call_id"] in {"call_0", "call_1", "call_2"}:
            assert new["content"].startswith(CLEARED_RESULT_PREFIX)
            assert {k: v for k, v in new.items() if k != "content"} == {
                k: v for k, v in old.items() if k != "content"
            }
        else:
            assert new is old  # untouched messages are the very same objects
    assert cleared[2]["content"] == "[tool result cleared: Read `src/f0.py`, 700 tokens]"
    assert cleared[4]["content"] == "[tool result cleared: Bash `ls -la`, 700 tokens]"


def test_excluded_tools_and_already_cleared_results_are_left_alone() -> None:
    messages = openai_history()
    plan = plan_for(messages, "openai", keep=1, exclude_tools=("Bash",))
    assert "call_1" not in {c.tool_call_id for c in plan.cleared}
    cleared = FORMATS.get("openai").apply_cleared(messages, plan.cleared)
    again = plan_for(cleared, "openai", keep=1, exclude_tools=("Bash",))
    assert again.cleared == () and again.reason and "nothing to clear" in again.reason


def test_nothing_is_cleared_for_less_than_clear_at_least() -> None:
    plan = plan_for(openai_history(), "openai", keep=3, clear_at_least=10_000)
    assert plan.cleared == ()
    assert plan.reason and "clear_at_least=10000" in plan.reason


def test_short_results_are_not_worth_a_placeholder() -> None:
    messages = openai_history()
    messages[2]["content"] = "ok"
    plan = plan_for(messages, "openai", keep=0)
    assert "call_0" not in {c.tool_call_id for c in plan.cleared}


def test_inputs_are_cleared_on_request_in_both_formats() -> None:
    messages = openai_history()
    for i in (0, 2):
        messages[1 + 2 * i]["tool_calls"][0]["function"]["arguments"] = json.dumps(
            {"file_path": f"src/f{i}.py", "content": "x = 1\n" * 200}
        )
    plan = plan_for(messages, "openai", keep=3, clear_tool_inputs=True)
    cleared = FORMATS.get("openai").apply_cleared(messages, plan.cleared)
    arguments = cleared[1]["tool_calls"][0]["function"]["arguments"]
    assert is_cleared_input(arguments) and isinstance(arguments, str)
    assert cleared[1]["tool_calls"][0]["id"] == "call_0"
    # The result placeholder still names what the call worked on.
    assert "src/f0.py" in cleared[2]["content"]

    blocks = anthropic_history()
    blocks[1]["content"][1]["input"]["content"] = "y = 2\n" * 200
    plan = plan_for(blocks, "anthropic", keep=1, clear_tool_inputs=True)
    new = FORMATS.get("anthropic").apply_cleared(blocks, plan.cleared)
    assert isinstance(new[1]["content"][1]["input"], dict)
    assert is_cleared_input(json.dumps(new[1]["content"][1]["input"]))
    assert new[1]["content"][2] is blocks[1]["content"][2]  # the kept use is untouched


def test_anthropic_results_keep_their_shape_and_other_fields() -> None:
    messages = anthropic_history()
    original = copy.deepcopy(messages)
    plan = plan_for(messages, "anthropic", keep=0)
    new = FORMATS.get("anthropic").apply_cleared(messages, plan.cleared)
    assert messages == original
    first, second, note = new[2]["content"]
    assert first["content"] == [{"type": "text", "text": plan.cleared[0].placeholder}]
    assert first["cache_control"] == {"type": "ephemeral"} and first["tool_use_id"] == "t1"
    assert second["content"].startswith(CLEARED_RESULT_PREFIX) and second["is_error"] is True
    assert note is messages[2]["content"][2]
    assert new[1] is messages[1] and new[3] is messages[3]


def test_the_placeholder_names_the_tool_the_target_and_the_size() -> None:
    assert result_placeholder("Grep", '{"pattern": "TODO"}', 1234) == (
        "[tool result cleared: Grep `TODO`, 1,234 tokens]"
    )
    assert result_placeholder("think", "{}", 5) == "[tool result cleared: think, 5 tokens]"


def test_stepped_clearing_moves_in_whole_runs_and_stays_between_steps() -> None:
    # LONG is ~700 chars/4-tokens; a step of 1,400 tokens is two results.
    step = 2 * TOKENIZER.count(LONG)
    cleared_by_turn = []
    for results in range(5, 12):
        plan = plan_for(openai_history(results), "openai", keep=2, step_tokens=step)
        cleared_by_turn.append([c.tool_call_id for c in plan.cleared])
        assert plan.kept >= 2 and plan.kept < 2 + 2 + 1
        assert plan.kept + len(plan.cleared) == results
    # The cleared set grows only by whole runs of two, and is the same set between steps.
    sizes = [len(ids) for ids in cleared_by_turn]
    assert sizes == sorted(sizes)
    assert len(set(map(tuple, cleared_by_turn))) < len(cleared_by_turn)
    for before, after in itertools.pairwise(cleared_by_turn):
        assert after[: len(before)] == before


def test_the_exact_rule_keeps_exactly_keep() -> None:
    for results in range(4, 8):
        plan = plan_for(openai_history(results), "openai", keep=2)
        assert plan.kept == 2
        assert len(plan.cleared) == results - 2


def test_a_step_is_at_least_clear_at_least_and_says_why_it_waits() -> None:
    one = TOKENIZER.count(LONG)
    # A step of one result, raised to three by clear_at_least: 5 uses, 2 kept, 3 clear.
    at_least = 2 * one + one // 2
    plan = plan_for(openai_history(5), "openai", keep=2, step_tokens=one, clear_at_least=at_least)
    assert len(plan.cleared) == 3
    waiting = plan_for(openai_history(4), "openai", keep=1, step_tokens=one, clear_at_least=4 * one)
    assert not waiting.cleared and f"clear_at_least={4 * one}" in (waiting.reason or "")
    default = plan_for(openai_history(4), "openai", keep=1, step_tokens=20_000)
    assert not default.cleared and "COMPACTOR_CLEARING=exact" in (default.reason or "")


def test_the_strategies_step_is_at_most_a_quarter_of_the_threshold() -> None:
    assert step_under(20_000, 167_232) == 20_000
    assert step_under(20_000, 31_232) == 7_808
    assert step_under(0, 31_232) == 0  # COMPACTOR_CLEARING=exact
