"""Explicit mappers between HTTP schemas and service values."""

from __future__ import annotations

from app.api.mappers.strategy import clear_settings, cleared_out, restored_out
from app.api.schemas.history import (
    Breakdown,
    CompactIn,
    CompactOut,
    EstimateOut,
    HistoryIn,
    SummarizerOut,
)
from app.engine.compaction.strategy import StrategyName
from app.engine.counting.estimate import UsageReport
from app.services.compaction import CompactionOutcome
from app.services.estimation import CountedHistory
from app.services.history import CompactOptions, HistoryInput


def history_input(body: HistoryIn) -> HistoryInput:
    return HistoryInput(
        messages=body.messages,
        format=body.format,
        system=body.system,
        tools=body.tools,
        tool_fields={
            name: value
            for name, value in (
                ("functions", body.functions),
                ("tool_choice", body.tool_choice),
                ("function_call", body.function_call),
            )
            if value is not None and value != []
        },
        model=body.model,
        context_window=body.context_window,
        reserve_tokens=body.reserve_tokens,
        trigger_tokens=body.trigger_tokens,
        keep_recent_tokens=getattr(body, "keep_recent_tokens", None),
        tokenizer=body.tokenizer,
        usage=tuple(UsageReport(u.message_index, **u.report()) for u in body.usage),
        estimate_floor=body.estimate_floor,
    )


def compact_options(body: CompactIn) -> CompactOptions:
    return CompactOptions(
        force=body.force,
        instructions=body.instructions,
        thinking=body.thinking,
        strategy=StrategyName(body.strategy) if body.strategy is not None else None,
        clear=clear_settings(body.clear),
        pinned=tuple(body.pinned),
    )


def estimate_out(counted: CountedHistory, estimate_floor: int = 0) -> EstimateOut:
    estimate = counted.estimate
    method = counted.choice.method
    return EstimateOut(
        tokens=estimate.tokens,
        method=f"usage+{method}" if estimate.anchor is not None else method,
        exact=counted.exact,
        encoding=counted.choice.tokenizer.name,
        model=counted.choice.model.name or None,
        model_known=counted.model_known,
        breakdown=Breakdown(
            system=estimate.system,
            tools=estimate.tools,
            messages=estimate.messages,
            estimated=list(counted.estimated_parts),
        ),
        per_message=list(estimate.per_message),
        context_window=counted.settings.effective_window,
        context_window_source=counted.context_window_source.value,
        reserve_tokens=counted.settings.reserve_tokens,
        threshold=counted.threshold,
        should_compact=counted.should_compact,
        usage_anchor_index=estimate.anchor.message_index if estimate.anchor else None,
        estimate_floor=estimate_floor,
    )


def compact_out(body: CompactIn, outcome: CompactionOutcome) -> CompactOut:
    counted = outcome.counted
    common = {
        "format": counted.format,
        "system": body.system,
        "tools": body.tools,
        "tokens_before": outcome.tokens_before,
        "threshold": counted.threshold,
        "context_window": counted.settings.effective_window,
        "context_window_source": counted.context_window_source.value,
        "model_known": counted.model_known,
        "strategy": outcome.strategy,
    }
    if not outcome.compacted:
        return CompactOut(
            compacted=False,
            reason=outcome.reason,
            messages=body.messages,
            tokens_after=outcome.tokens_before,
            estimate_floor=body.estimate_floor,
            **common,
        )
    assert outcome.messages is not None and outcome.tokens_after is not None
    out = CompactOut(
        compacted=True,
        messages=outcome.messages,
        tokens_after=outcome.tokens_after,
        estimate_floor=len(outcome.messages),
        applied=[step.value for step in outcome.applied],
        cleared_tool_uses=cleared_out(outcome.cleared),
        tokens_cleared=sum(c.tokens_saved for c in outcome.cleared),
        **common,
    )
    plan, summary, summarizer = outcome.plan, outcome.summary, outcome.summarizer
    if plan is None or summary is None or summarizer is None:
        return out  # tool results cleared, nothing summarized
    info = summarizer.info
    finished = outcome.finished
    return out.model_copy(
        update={
            "summary": summary.summary,
            "updated_previous_summary": plan.previous_summary is not None,
            "cut_index": plan.cut_index,
            "summarized_messages": len(plan.to_summarize),
            "summarizer": SummarizerOut(
                provider=info.provider,
                model=info.model,
                thinking=summary.thinking,
                attempts=summary.attempts,
                chunks=summary.chunks,
                input_tokens=summary.usage.input_tokens,
                output_tokens=summary.usage.output_tokens,
                cache_read_tokens=summary.usage.cache_read_tokens,
                cache_write_tokens=summary.usage.cache_write_tokens,
            ),
            "restored_facts": restored_out(finished.restored) if finished else [],
            "current_request": finished.current_request if finished else None,
        }
    )
