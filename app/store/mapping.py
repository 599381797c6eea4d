"""Rows and JSON columns ↔ the store's views: the one place a JSON column is read or
written. Older rows lack fields added since; they read as the defaults of their time."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from app.engine.clearing import DEFAULT_KEEP_TOOL_USES, ClearedToolUse, ClearSettings
from app.engine.compaction.strategy import DEFAULT_STRATEGY, CompactionStep, StrategyName
from app.engine.thinking import ThinkingLevel
from app.store.models import CompactionRow, SessionRow
from app.store.views import (
    CompactionRecord,
    CompactionStall,
    NewCompaction,
    RestoredFactRecord,
    SessionSettings,
    SessionView,
    SummarizerRecord,
)


def aware(moment: datetime) -> datetime:
    """SQLite hands timestamps back without their zone; they were written in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def settings_from_json(stored: Mapping[str, Any] | None) -> SessionSettings:
    """A session's settings from its JSON column (missing keys: the defaults)."""
    stored = stored or {}
    thinking, clear, strategy = stored.get("thinking"), stored.get("clear"), stored.get("strategy")
    return SessionSettings(
        context_window=stored.get("context_window"),
        reserve_tokens=stored.get("reserve_tokens"),
        trigger_tokens=stored.get("trigger_tokens"),
        keep_recent_tokens=stored.get("keep_recent_tokens"),
        thinking=ThinkingLevel(thinking) if thinking else None,
        strategy=StrategyName(strategy) if strategy else None,
        clear=_clear_from_json(clear) if clear is not None else None,
        pinned=tuple(stored.get("pinned") or ()),
        prepare_ahead_ratio=_ratio_from_json(stored.get("prepare_ahead_ratio")),
    )


def settings_to_json(settings: SessionSettings) -> dict[str, Any]:
    """The JSON column: only the settings that were given."""
    stored: dict[str, Any] = {
        "context_window": settings.context_window,
        "reserve_tokens": settings.reserve_tokens,
        "trigger_tokens": settings.trigger_tokens,
        "keep_recent_tokens": settings.keep_recent_tokens,
        "thinking": settings.thinking.value if settings.thinking is not None else None,
        "strategy": settings.strategy.value if settings.strategy is not None else None,
        "clear": _clear_to_json(settings.clear) if settings.clear is not None else None,
        "pinned": list(settings.pinned) if settings.pinned else None,
        "prepare_ahead_ratio": settings.prepare_ahead_ratio,
    }
    return {key: value for key, value in stored.items() if value is not None}


def _ratio_from_json(stored: Any) -> float | Literal["off"] | None:
    """A stored prepare-ahead ratio: a number in (0, 1], "off", or absent (an imported
    bundle may hold anything: refused as a ValueError)."""
    if stored is None:
        return None
    if stored == "off":
        return "off"
    if isinstance(stored, bool) or not isinstance(stored, int | float) or not 0 < stored <= 1:
        raise ValueError(f"prepare_ahead_ratio {stored!r} is not a number in (0, 1] or 'off'")
    return float(stored)


def _clear_from_json(stored: Mapping[str, Any]) -> ClearSettings:
    return ClearSettings(
        trigger=stored.get("trigger"),
        keep=int(stored.get("keep", DEFAULT_KEEP_TOOL_USES)),
        clear_at_least=int(stored.get("clear_at_least", 0)),
        exclude_tools=tuple(stored.get("exclude_tools") or ()),
        clear_tool_inputs=bool(stored.get("clear_tool_inputs", False)),
    )


def _clear_to_json(clear: ClearSettings) -> dict[str, Any]:
    return {
        "trigger": clear.trigger,
        "keep": clear.keep,
        "clear_at_least": clear.clear_at_least,
        "exclude_tools": list(clear.exclude_tools),
        "clear_tool_inputs": clear.clear_tool_inputs,
    }


def stall_to_json(stall: CompactionStall | None) -> dict[str, Any] | None:
    """The `compaction_stall` column of a stall (None clears it)."""
    if stall is None:
        return None
    return {
        "entry_count": stall.entry_count,
        "tokens": stall.tokens,
        "threshold": stall.threshold,
        "kept_tokens": stall.kept_tokens,
        "keep_recent_tokens": stall.keep_recent_tokens,
        "base": stall.base,
    }


def _stall_from_json(stored: Mapping[str, Any]) -> CompactionStall:
    return CompactionStall(
        entry_count=int(stored.get("entry_count", -1)),
        tokens=int(stored.get("tokens", 0)),
        threshold=int(stored.get("threshold", 0)),
        kept_tokens=int(stored.get("kept_tokens", 0)),
        keep_recent_tokens=int(stored.get("keep_recent_tokens", 0)),
        base=stored.get("base"),
    )


def session_view(row: SessionRow) -> SessionView:
    """The view of a session row."""
    return SessionView(
        id=row.id,
        tenant=row.tenant,
        model=row.model,
        format=row.format,
        system=row.system,
        tools=list(row.tools or []),
        settings=settings_from_json(row.settings),
        metadata=dict(row.meta or {}),
        entry_count=int(row.entry_count or 0),
        compaction_count=int(row.compaction_count or 0),
        system_prefix_count=int(row.system_prefix_count or 0),
        created_at=aware(row.created_at),
        compaction_stall=(_stall_from_json(row.compaction_stall) if row.compaction_stall else None),
    )


def _summarizer_from_json(stored: Mapping[str, Any] | None) -> SummarizerRecord:
    stored = stored or {}
    return SummarizerRecord(
        provider=str(stored.get("provider", "")),
        model=str(stored.get("model", "")),
        thinking=ThinkingLevel(stored.get("thinking") or "off"),
        attempts=int(stored.get("attempts", 1)),
    )


def _summarizer_to_json(summarizer: SummarizerRecord) -> dict[str, Any]:
    return {
        "provider": summarizer.provider,
        "model": summarizer.model,
        "thinking": summarizer.thinking.value,
        "attempts": summarizer.attempts,
    }


def _cleared_to_json(cleared: Iterable[ClearedToolUse]) -> list[dict[str, Any]]:
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


def _cleared_from_json(stored: Sequence[Mapping[str, Any]] | None) -> tuple[ClearedToolUse, ...]:
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


# Record fields stored as they are, in columns of the same name.
_PLAIN_COMPACTION_FIELDS = (
    "session_id",
    "ordinal",
    "previous_id",
    "trigger",
    "summary",
    "first_kept_seq",
    "covered_seq",
    "tokens_before",
    "tokens_after",
    "instructions",
    "current_request",
    "reverted_id",
)


def compaction_row(new: NewCompaction, compaction_id: str) -> CompactionRow:
    """The row that records `new` under `compaction_id`."""
    return CompactionRow(
        id=compaction_id,
        **{name: getattr(new, name) for name in _PLAIN_COMPACTION_FIELDS},
        summarizer=_summarizer_to_json(new.summarizer),
        strategy=new.strategy.value,
        applied=[step.value for step in new.applied],
        restored_facts=[{"kind": f.kind, "text": f.text} for f in new.restored_facts],
        cleared_tool_uses=_cleared_to_json(new.cleared_tool_uses),
    )


def compaction_record(row: CompactionRow) -> CompactionRecord:
    """The record a compaction row holds."""
    return CompactionRecord(
        id=row.id,
        created_at=aware(row.created_at),
        **{name: getattr(row, name) for name in _PLAIN_COMPACTION_FIELDS},
        summarizer=_summarizer_from_json(row.summarizer),
        strategy=StrategyName(row.strategy) if row.strategy else DEFAULT_STRATEGY,
        applied=tuple(CompactionStep(step) for step in row.applied or (CompactionStep.SUMMARIZE,)),
        restored_facts=tuple(
            RestoredFactRecord(str(f["kind"]), str(f["text"])) for f in row.restored_facts or ()
        ),
        cleared_tool_uses=_cleared_from_json(row.cleared_tool_uses),
    )
