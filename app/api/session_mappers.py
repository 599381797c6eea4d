"""Mappers from session service values to HTTP bodies."""

from __future__ import annotations

from typing import Any

from app.api.mappers import estimate_out
from app.api.schemas import SummarizerOut
from app.api.schemas_sessions import (
    CompactionOut,
    ContextOut,
    PrepareOut,
    SessionOut,
)
from app.services.sessions import CompactResult, ContextView
from app.store.models import CompactionRow, SessionRow


def session_out(row: SessionRow) -> SessionOut:
    settings: dict[str, Any] = row.settings or {}
    return SessionOut(
        id=row.id,
        model=row.model,
        format=row.format,
        system=row.system,
        tools=row.tools or [],
        context_window=settings.get("context_window"),
        reserve_tokens=settings.get("reserve_tokens"),
        trigger_tokens=settings.get("trigger_tokens"),
        keep_recent_tokens=settings.get("keep_recent_tokens"),
        thinking=settings.get("thinking"),
        metadata=row.meta or {},
        message_count=row.entry_count,
        compaction_count=row.compaction_count,
        created_at=row.created_at,
    )


def compaction_out(row: CompactionRow) -> CompactionOut:
    summarizer = row.summarizer or {}
    return CompactionOut(
        id=row.id,
        created_at=row.created_at,
        trigger=row.trigger,
        summary=row.summary,
        first_kept_seq=row.first_kept_seq,
        tokens_before=row.tokens_before,
        tokens_after=row.tokens_after,
        summarizer=SummarizerOut(
            provider=summarizer.get("provider", ""),
            model=summarizer.get("model", ""),
            thinking=summarizer.get("thinking", "off"),
            attempts=summarizer.get("attempts", 1),
        ),
        instructions=row.instructions,
        previous_id=row.previous_id,
    )


def context_out(view: ContextView) -> ContextOut:
    context = view.context
    estimate = estimate_out(view.counted)
    estimate.estimate_floor = context.estimate_floor
    return ContextOut(
        format=context.format,
        system=context.session.system,
        tools=context.session.tools or [],
        messages=context.messages,
        estimate=estimate,
    )


def prepare_out(result: CompactResult) -> PrepareOut:
    return PrepareOut(
        compacted=result.compacted,
        reason=result.reason,
        compaction=compaction_out(result.record) if result.record is not None else None,
        context=context_out(result.view),
    )
