"""What a session's compaction record keeps, for every strategy.

A record describes the whole context after it: the summary (carried over unchanged when
only tool results were cleared), where the kept entries start, and every tool use cleared
among them, so the context is rebuilt from the untouched transcript.
"""

from __future__ import annotations

from datetime import UTC, datetime

from app.services.compaction import CompactionOutcome
from app.services.sessions.context import SessionContext
from app.store.views import (
    NO_SUMMARIZER,
    CompactionRecord,
    NewCompaction,
    RestoredFactRecord,
    SummarizerRecord,
)

# The id of a record that a dry run shows and never writes.
DRY_RUN_ID = "dry-run"


def preview_record(new: NewCompaction) -> CompactionRecord:
    """The record `new` would become, shown by a dry run and never written."""
    fields = {name: getattr(new, name) for name in NewCompaction.__dataclass_fields__}
    return CompactionRecord(id=DRY_RUN_ID, created_at=datetime.now(UTC), **fields)


def new_compaction(
    context: SessionContext, outcome: CompactionOutcome, trigger: str, instructions: str | None
) -> NewCompaction:
    """The record of `outcome`, a compaction of `context`, on top of its latest record."""
    plan, summary, latest = outcome.plan, outcome.summary, context.latest
    conversation = outcome.counted.conversation
    assert conversation is not None
    if plan is not None and summary is not None and outcome.summarizer is not None:
        first_kept = context.seqs[plan.cut_index]
        assert first_kept is not None
        info = outcome.summarizer.info
        text = summary.summary
        summarizer = SummarizerRecord(
            provider=info.provider,
            model=info.model,
            thinking=summary.thinking,
            attempts=summary.attempts,
        )
        kept_from = plan.cut_index
    else:
        # Only tool results were cleared: the summary and the kept entries stay.
        first_kept = latest.first_kept_seq if latest is not None else 0
        text = latest.summary if latest is not None else ""
        summarizer = NO_SUMMARIZER
        kept_from = 0
    kept_ids = {
        call_id
        for message in conversation.messages[kept_from:]
        for call_id in (*message.tool_call_ids, *message.tool_result_ids)
    }
    earlier = latest.cleared_tool_uses if latest is not None else ()
    by_id = {c.tool_call_id: c for c in (*earlier, *outcome.cleared)}
    finished = outcome.finished
    return NewCompaction(
        session_id=context.session.id,
        ordinal=(latest.ordinal + 1) if latest is not None else 1,
        previous_id=latest.id if latest is not None else None,
        trigger=trigger,
        summary=text,
        first_kept_seq=first_kept,
        covered_seq=max(s for s in context.seqs if s is not None) + 1,
        tokens_before=outcome.tokens_before,
        tokens_after=outcome.tokens_after or 0,
        summarizer=summarizer,
        instructions=instructions,
        strategy=outcome.strategy,
        applied=outcome.applied,
        restored_facts=(
            tuple(RestoredFactRecord(f.kind.value, f.text) for f in finished.restored)
            if finished
            else ()
        ),
        current_request=finished.current_request if finished else None,
        cleared_tool_uses=tuple(c for call_id, c in by_id.items() if call_id in kept_ids),
    )
