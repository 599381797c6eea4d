"""What a session's compaction record keeps, for every strategy.

A record describes the whole context after it: the summary (carried over unchanged when
only tool results were cleared), where the kept entries start, and every tool use cleared
among them, so the context is rebuilt from the untouched transcript.
"""

from __future__ import annotations

from typing import Any

from app.services.clearing import cleared_to_json
from app.services.compaction import CompactionOutcome
from app.services.sessions.context import SessionContext

_NO_SUMMARIZER = {"provider": "none", "model": "none", "thinking": "off", "attempts": 0}


def record_fields(context: SessionContext, outcome: CompactionOutcome) -> dict[str, Any]:
    """The columns of the record of `outcome` that depend on its strategy."""
    plan, summary, latest = outcome.plan, outcome.summary, context.latest
    conversation = outcome.counted.conversation
    assert conversation is not None
    if plan is not None and summary is not None and outcome.summarizer is not None:
        first_kept = context.seqs[plan.cut_index]
        assert first_kept is not None
        info = outcome.summarizer.info
        text = summary.summary
        summarizer: dict[str, Any] = {
            "provider": info.provider,
            "model": info.model,
            "thinking": summary.thinking.value,
            "attempts": summary.attempts,
        }
        kept_from = plan.cut_index
    else:
        # Only tool results were cleared: the summary and the kept entries stay.
        first_kept = latest.first_kept_seq if latest is not None else 0
        text = latest.summary if latest is not None else ""
        summarizer = dict(_NO_SUMMARIZER)
        kept_from = 0
    kept_ids = {
        call_id
        for message in conversation.messages[kept_from:]
        for call_id in (*message.tool_call_ids, *message.tool_result_ids)
    }
    earlier = latest.cleared_tool_uses if latest is not None else ()
    by_id = {c.tool_call_id: c for c in (*earlier, *outcome.cleared)}
    cleared = [c for call_id, c in by_id.items() if call_id in kept_ids]
    finished = outcome.finished
    return {
        "summary": text,
        "first_kept_seq": first_kept,
        "summarizer": summarizer,
        "strategy": outcome.strategy,
        "applied": list(outcome.applied),
        "restored_facts": (
            [{"kind": f.kind.value, "text": f.text} for f in finished.restored] if finished else []
        ),
        "current_request": finished.current_request if finished else None,
        "cleared_tool_uses": cleared_to_json(cleared),
    }
