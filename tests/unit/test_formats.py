"""Wire formats: detection, normalization, validation messages."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine.errors import InvalidHistoryError
from app.engine.messages import BlockKind, Role
from app.formats import anthropic, openai
from app.formats.registry import FORMATS
from tests.conftest import BIG_ANTHROPIC, BIG_OPENAI, load_json


def test_detects_both_formats_on_real_transcripts() -> None:
    assert FORMATS.detect(load_json(BIG_OPENAI)["messages"]).name == "openai"
    assert FORMATS.detect(load_json(BIG_ANTHROPIC)["messages"]).name == "anthropic"


@pytest.mark.parametrize(
    ("messages", "system", "expected"),
    [
        ([{"role": "user", "content": "hi"}], None, "openai"),
        ([{"role": "user", "content": "hi"}], "be brief", "anthropic"),
        ([{"role": "tool", "tool_call_id": "x", "content": "1"}], None, "openai"),
        (
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]}],
            None,
            "anthropic",
        ),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}],
            None,
            "openai",
        ),
    ],
)
def test_detection_rules(messages: list[Any], system: Any, expected: str) -> None:
    assert FORMATS.detect(messages, system).name == expected


def test_openai_normalizes_tool_calls_results_and_system() -> None:
    conversation = openai.parse(
        [
            {"role": "developer", "content": "rules"},
            {"role": "user", "content": [{"type": "text", "text": "read it"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "file body"},
        ]
    )
    assert conversation.inline_system_count == 1
    call, result = conversation.messages[2], conversation.messages[3]
    assert call.tool_call_ids == ("c1",) and call.is_valid_cut_point
    assert result.tool_result_ids == ("c1",) and not result.is_valid_cut_point


def test_anthropic_tool_result_message_is_not_a_valid_cut_point() -> None:
    message = anthropic.parse_message(
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": [{"type": "text", "text": "x"}],
                },
                {"type": "text", "text": "and also"},
            ],
        },
        "messages[0]",
    )
    assert message.role is Role.USER
    assert message.is_tool_result and not message.is_valid_cut_point


def test_unknown_blocks_are_carried_and_counted_not_dropped() -> None:
    message = anthropic.parse_message(
        {"role": "assistant", "content": [{"type": "server_tool_use", "id": "s", "x": 1}]},
        "messages[0]",
    )
    assert message.blocks[0].kind is BlockKind.OTHER
    assert "server_tool_use" in message.blocks[0].text


@pytest.mark.parametrize(
    ("module", "raw", "fragment"),
    [
        (openai, {"role": "wizard", "content": "x"}, "messages[0].role: unknown role 'wizard'"),
        (openai, {"role": "user", "content": 5}, "messages[0].content: must be a string"),
        (openai, {"role": "tool", "content": "x"}, "messages[0].tool_call_id"),
        (openai, {"role": "assistant", "tool_calls": [{"id": "a"}]}, "tool_calls[0].function"),
        (anthropic, {"role": "system", "content": "x"}, "top-level system field"),
        (anthropic, {"role": "user", "content": [{"type": "tool_use", "name": "x"}]}, ".id"),
        (anthropic, {"role": "user", "content": {"a": 1}}, "must be a string or an array"),
    ],
)
def test_invalid_messages_name_the_field_to_fix(module: Any, raw: Any, fragment: str) -> None:
    with pytest.raises(InvalidHistoryError) as caught:
        module.parse_message(raw, "messages[0]")
    assert fragment in str(caught.value)


def test_anthropic_system_blocks_become_text() -> None:
    blocks = [{"type": "text", "text": "one", "cache_control": {"type": "ephemeral"}}]
    assert anthropic.system_text(blocks) == "one"


def test_anthropic_blocks_in_an_openai_history_are_refused_with_a_hint() -> None:
    raw = {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x"}]}
    with pytest.raises(InvalidHistoryError, match="send format=anthropic"):
        openai.parse_message(raw, "messages[0]")


@pytest.mark.parametrize("role", ["user", "system", "tool"])
def test_only_assistant_messages_may_omit_content(role: str) -> None:
    raw: dict[str, Any] = {"role": role, "tool_call_id": "t"} if role == "tool" else {"role": role}
    with pytest.raises(InvalidHistoryError, match="needs content"):
        openai.parse_message(raw, "messages[0]")
    assert openai.parse_message({"role": "assistant", "content": None}, "m").blocks == ()
