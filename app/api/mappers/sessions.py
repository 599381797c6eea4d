"""Mappers between the session HTTP bodies and the session service's values."""

from __future__ import annotations

from dataclasses import asdict

from app.api.mappers.history import estimate_out
from app.api.mappers.strategy import clear_in, clear_settings, cleared_out, strategy_name
from app.api.schemas.history import SummarizerOut
from app.api.schemas.sessions import (
    CompactionOut,
    ContextOut,
    FoldedOut,
    PrepareOut,
    SessionIn,
    SessionOut,
)
from app.api.schemas.strategy import RestoredFactOut
from app.services.sessions.service import CompactResult, ContextView, NewSession
from app.services.sessions.views import CompactionRecord, SessionSettings, SessionView


def new_session(body: SessionIn) -> NewSession:
    return NewSession(
        model=body.model,
        format=body.format,
        system=body.system,
        tools=list(body.tools),
        settings=SessionSettings(
            context_window=body.context_window,
            reserve_tokens=body.reserve_tokens,
            trigger_tokens=body.trigger_tokens,
            keep_recent_tokens=body.keep_recent_tokens,
            thinking=body.thinking,
            strategy=strategy_name(body.strategy),
            clear=clear_settings(body.clear) if body.clear is not None else None,
            pinned=tuple(body.pinned or ()),
            prepare_ahead_ratio=body.prepare_ahead_ratio,
        ),
        metadata=dict(body.metadata),
    )


def session_out(view: SessionView) -> SessionOut:
    settings = view.settings
    return SessionOut(
        id=view.id,
        model=view.model,
        format=view.format,
        system=view.system,
        tools=view.tools,
        context_window=settings.context_window,
        reserve_tokens=settings.reserve_tokens,
        trigger_tokens=settings.trigger_tokens,
        keep_recent_tokens=settings.keep_recent_tokens,
        thinking=settings.thinking,
        strategy=settings.effective_strategy.value,
        clear=clear_in(settings.clear) if settings.clear is not None else None,
        pinned=list(settings.pinned),
        prepare_ahead_ratio=settings.prepare_ahead_ratio,
        metadata=view.metadata,
        message_count=view.entry_count,
        compaction_count=view.compaction_count,
        created_at=view.created_at,
    )


def compaction_out(record: CompactionRecord) -> CompactionOut:
    return CompactionOut(
        id=record.id,
        created_at=record.created_at,
        trigger=record.trigger,
        summary=record.summary,
        first_kept_seq=record.first_kept_seq,
        tokens_before=record.tokens_before,
        tokens_after=record.tokens_after,
        summarizer=SummarizerOut(**asdict(record.summarizer)),
        instructions=record.instructions,
        previous_id=record.previous_id,
        strategy=record.strategy.value,
        applied=[step.value for step in record.applied],
        restored_facts=[RestoredFactOut(kind=f.kind, text=f.text) for f in record.restored_facts],
        current_request=record.current_request,
        cleared_tool_uses=cleared_out(record.cleared_tool_uses),
        reverted_id=record.reverted_id,
    )


def context_out(view: ContextView) -> ContextOut:
    context = view.context
    estimate = estimate_out(view.counted, context.estimate_floor)
    return ContextOut(
        format=context.format,
        system=context.session.system,
        tools=context.session.tools,
        messages=context.messages,
        estimate=estimate,
    )


def prepare_out(result: CompactResult, dry_run: bool = False) -> PrepareOut:
    return PrepareOut(
        compacted=result.compacted,
        reason=result.reason,
        compaction=compaction_out(result.record) if result.record is not None else None,
        context=context_out(result.view),
        compaction_ineffective=result.ineffective,
        warning=result.warning,
        dry_run=dry_run,
        folded=folded_out(result),
    )


def folded_out(result: CompactResult) -> FoldedOut | None:
    """The entries a compaction folded: from the previous kept start to the new one."""
    folded = result.folded
    if folded is None:
        return None
    first, last = folded
    return FoldedOut(from_seq=first, to_seq=last, count=last - first + 1)
