"""Tool-result clearing applied to a caller's history, and the records that replay it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.engine.clearing import (
    ClearedToolUse,
    ClearingPlan,
    ClearSettings,
    plan_clearing,
)
from app.services.estimation import CountedHistory, EstimationService
from app.services.history import HistoryInput


@dataclass(frozen=True, slots=True)
class ClearedHistory:
    """The plan, and when it clears anything, the cleared history with its count."""

    plan: ClearingPlan
    history: HistoryInput | None = None
    counted: CountedHistory | None = None


def clearing_trigger(counted: CountedHistory, settings: ClearSettings) -> int:
    """Tokens above which clearing runs: its own trigger, else the compaction threshold."""
    return settings.trigger if settings.trigger is not None else counted.threshold


def clearing_due(counted: CountedHistory, strategy: str, settings: ClearSettings) -> bool:
    """True when a strategy clears tool results and the history is over the clearing
    trigger (which may lie below the compaction threshold)."""
    if strategy not in ("clear_tool_results", "auto"):
        return False
    return counted.estimate.tokens > clearing_trigger(counted, settings)


def clear_history(
    estimation: EstimationService,
    history: HistoryInput,
    counted: CountedHistory,
    settings: ClearSettings,
) -> ClearedHistory:
    """Clears what `settings` allow in `history` (never modified) and counts the result.

    The usage reports measured the uncleared messages, so the cleared history is counted
    from its messages alone.
    """
    conversation = counted.conversation
    assert conversation is not None
    plan = plan_clearing(
        conversation.messages, settings, counted.choice.tokenizer, counted.inline_system_count
    )
    if not plan.cleared:
        return ClearedHistory(plan)
    messages = counted.wire.apply_cleared(history.messages, plan.cleared)
    cleared = replace(history, messages=messages, format=counted.format, usage=(), estimate_floor=0)
    return ClearedHistory(plan, cleared, estimation.count(cleared, parse_all=True))


def cleared_to_json(cleared: Iterable[ClearedToolUse]) -> list[dict[str, Any]]:
    """Cleared tool uses as stored in a compaction record."""
    return [
        {
            "tool_call_id": c.tool_call_id,
            "tool_name": c.tool_name,
            "placeholder": c.placeholder,
            "input_placeholder": c.input_placeholder,
            "tokens_saved": c.tokens_saved,
        }
        for c in cleared
    ]


def cleared_from_json(stored: Sequence[Mapping[str, Any]] | None) -> tuple[ClearedToolUse, ...]:
    """The cleared tool uses of a compaction record (none for older records)."""
    return tuple(
        ClearedToolUse(
            tool_call_id=str(item["tool_call_id"]),
            tool_name=str(item.get("tool_name", "tool")),
            placeholder=str(item["placeholder"]),
            input_placeholder=item.get("input_placeholder"),
            tokens_saved=int(item.get("tokens_saved", 0)),
        )
        for item in stored or ()
    )
