"""Mappers from session service values to HTTP bodies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.api.mappers.history import estimate_out
from app.api.schemas.history import SummarizerOut
from app.api.schemas.sessions import (
    CompactionOut,
    ContextOut,
    PrepareOut,
    SessionOut,
)
from app.api.schemas.strategy import ClearedToolUseOut
from app.services.sessions.service import CompactResult, ContextView
from app.store.models import CompactionRow, SessionRow


def _aware(moment: datetime) -> datetime:
    """SQLite hands timestamps back without their zone; they were written in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


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
        strategy=settings.get("strategy") or "summarize",
        clear=settings.get("clear"),
        pinned=settings.get("pinned") or [],
        metadata=row.meta or {},
        message_count=row.entry_count,
        compaction_count=row.compaction_count,
        created_at=_aware(row.created_at),
    )


def compaction_out(row: CompactionRow) -> CompactionOut:
    summarizer = row.summarizer or {}
    return CompactionOut(
        id=row.id,
        created_at=_aware(row.created_at),
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
        strategy=row.strategy or "summarize",
        applied=row.applied or ["summarize"],
        restored_facts=row.restored_facts or [],
        current_request=row.current_request,
        cleared_tool_uses=[
            ClearedToolUseOut(
                tool_call_id=c["tool_call_id"],
                tool_name=c.get("tool_name", "tool"),
                placeholder=c["placeholder"],
                input_cleared=c.get("input_placeholder") is not None,
                tokens_saved=c.get("tokens_saved", 0),
            )
            for c in row.cleared_tool_uses or []
        ],
    )


def context_out(view: ContextView) -> ContextOut:
    context = view.context
    estimate = estimate_out(view.counted, context.estimate_floor)
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
        compaction_ineffective=result.ineffective,
        warning=result.warning,
    )
