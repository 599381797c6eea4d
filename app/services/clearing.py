"""Tool-result clearing applied to a caller's history."""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.engine.clearing import (
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
