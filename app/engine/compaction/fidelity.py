"""What every summary gets after its summarizer is done, LLM or extractive: the pinned
facts it forgot, and the request of a turn the cut split."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.compaction.orchestration import CompactionPlan
from app.engine.compaction.pinned import PinnedFact, collect_pinned_facts, restore_pinned_facts
from app.engine.compaction.split_turn import split_turn_request, with_current_request


@dataclass(frozen=True, slots=True)
class FinishedSummary:
    """The summary to store, the facts added back into it, and the quoted request."""

    text: str
    restored: tuple[PinnedFact, ...] = ()
    current_request: str | None = None


def finish_summary(
    summary: str, plan: CompactionPlan, pinned: Sequence[str] = ()
) -> FinishedSummary:
    """`summary` with its pinned facts verified (missing ones restored) and, when the cut
    falls inside a turn, that turn's request quoted."""
    facts = collect_pinned_facts(plan.to_summarize, plan.previous_summary, pinned)
    text, restored = restore_pinned_facts(summary.strip(), facts)
    request = split_turn_request(plan.to_summarize, plan.kept, plan.previous_summary)
    return FinishedSummary(with_current_request(text, request), restored, request)
