"""The inline prefix of a Responses history: leading system/developer items, extended
through a vendor's opaque `compaction` item so it is never summarized or dropped."""

from __future__ import annotations

from typing import Any

from app.engine.compaction.orchestration import plan_compaction
from app.formats.registry import RESPONSES

SYSTEM = {"type": "message", "role": "developer", "content": "Be terse."}
OPAQUE = {"type": "compaction", "encrypted_content": "gAAAAB-opaque"}


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text}


def test_system_items_alone_are_the_prefix() -> None:
    assert RESPONSES.leading_system_count([SYSTEM, user("a"), user("b")]) == 1
    assert RESPONSES.leading_system_count([user("a")]) == 0


def test_a_compaction_item_extends_the_prefix_through_it() -> None:
    assert RESPONSES.leading_system_count([OPAQUE, user("a")]) == 1
    assert RESPONSES.leading_system_count([SYSTEM, OPAQUE, user("a")]) == 2
    # OpenAI's compacted window: retained user messages, then the item.
    assert RESPONSES.leading_system_count([user("kept"), OPAQUE, user("a")]) == 2


def test_the_plan_starts_after_the_item() -> None:
    raws = [SYSTEM, OPAQUE, user("one"), user("two"), user("three")]
    conversation = RESPONSES.parse(raws)
    assert conversation.inline_system_count == 2
    plan = plan_compaction(conversation.messages, [10] * 5, 10, conversation.inline_system_count)
    assert plan.previous_summary is None
    assert [m.raw for m in plan.to_summarize] == raws[2:4]
