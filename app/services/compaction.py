"""The /compact use case: decide, plan, summarize, rebuild the history in its format."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Protocol, TypeVar

import anyio

from app.engine.clearing import ClearedToolUse
from app.engine.compaction.fidelity import FinishedSummary, finish_summary
from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.orchestration import (
    CompactionPlan,
    SummaryOptions,
    SummaryOutcome,
    plan_compaction,
    summarize_plan,
)
from app.engine.compaction.thresholds import summary_output_budget
from app.engine.errors import (
    CallerGoneError,
    IneffectiveCompactionError,
    NothingToCompactError,
    SummarizerError,
)
from app.engine.ports import CallerGone, Summarizer
from app.engine.thinking import ThinkingLevel, clamp_level
from app.services.clearing import ClearedHistory, clear_history, clearing_trigger
from app.services.compaction_log import log_compaction
from app.services.estimation import CountedHistory, EstimationService
from app.services.history import CompactOptions, HistoryInput
from app.services.tracing import NullTracer, Span, Tracer

T = TypeVar("T")
SUMMARIZE = "summarize"
CLEAR_TOOL_RESULTS = "clear_tool_results"


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    """What /compact answers; `plan`/`summary` are None when nothing was compacted."""

    counted: CountedHistory
    compacted: bool
    reason: str | None = None
    plan: CompactionPlan | None = None
    summary: SummaryOutcome | None = None
    messages: list[Any] | None = None
    tokens_after: int | None = None
    summarizer: Summarizer | None = None
    # The strategy asked for, and the steps it applied: clear_tool_results, summarize.
    strategy: str = SUMMARIZE
    applied: tuple[str, ...] = ()
    finished: FinishedSummary | None = None
    cleared: tuple[ClearedToolUse, ...] = ()
    # The count of `messages` (a summarized history), built from the parts already
    # counted, so a caller that goes on with the new history does not count it again.
    after: CountedHistory | None = None

    @property
    def tokens_before(self) -> int:
        return self.counted.estimate.tokens


class CompactionObserver(Protocol):
    """Told about every compaction attempt (metrics live behind this)."""

    def compaction_finished(
        self, trigger: str, outcome: str, tokens_before: int, tokens_after: int | None
    ) -> None: ...

    def summarizer_attempts(self, provider: str, attempts: int, ok: bool) -> None: ...

    def summarizer_failed(self, provider: str, kind: str) -> None: ...


class NullObserver:
    def compaction_finished(
        self, trigger: str, outcome: str, tokens_before: int, tokens_after: int | None
    ) -> None:
        return None

    def summarizer_attempts(self, provider: str, attempts: int, ok: bool) -> None:
        return None

    def summarizer_failed(self, provider: str, kind: str) -> None:
        return None


class CompactionService:
    """Compacts one history with the configured summarizer."""

    def __init__(
        self,
        estimation: EstimationService,
        summarizer: Summarizer,
        default_thinking: ThinkingLevel = ThinkingLevel.OFF,
        marker: SummaryMarker | None = None,
        observer: CompactionObserver | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.estimation = estimation
        self.summarizer = summarizer
        self.default_thinking = default_thinking
        self.marker = marker or SummaryMarker()
        self.observer: CompactionObserver = observer or NullObserver()
        self.tracer: Tracer = tracer or NullTracer()

    async def compact(
        self,
        history: HistoryInput,
        options: CompactOptions,
        caller_gone: CallerGone = lambda: False,
        *,
        counted: CountedHistory | None = None,
    ) -> CompactionOutcome:
        """Compacts when over the threshold (or forced); never returns a partial result.
        `counted` is the caller's count of this very history (it is not counted again).
        A compaction that changed the history writes one log line (compaction_log)."""
        started = time.perf_counter()
        attributes = {"compactor.trigger": options.trigger}
        with self.tracer.span("compaction", attributes=attributes) as span:
            outcome = await self._observed(history, options, caller_gone, counted)
            _describe(span, outcome)
        if outcome.compacted:
            info = self.summarizer.info
            log_compaction(
                outcome.counted,
                tokens_after=outcome.tokens_after,
                trigger=options.trigger,
                strategy=outcome.strategy,
                applied=outcome.applied,
                summarizer=f"{info.provider}/{info.model}",
                duration_ms=(time.perf_counter() - started) * 1000,
                subject=options.subject,
                summarized_messages=len(outcome.plan.to_summarize) if outcome.plan else None,
            )
        return outcome

    async def _observed(
        self,
        history: HistoryInput,
        options: CompactOptions,
        caller_gone: CallerGone,
        counted: CountedHistory | None,
    ) -> CompactionOutcome:
        provider = self.summarizer.info.provider
        try:
            outcome = await self._compact(history, options, caller_gone, counted)
        except SummarizerError as exc:
            self.observer.summarizer_failed(provider, type(exc).__name__)
            self.observer.summarizer_attempts(provider, 1, ok=False)
            self.observer.compaction_finished(options.trigger, "failed", 0, None)
            raise
        except CallerGoneError:
            self.observer.compaction_finished(options.trigger, "abandoned", 0, None)
            raise
        except IneffectiveCompactionError as exc:
            self.observer.compaction_finished(
                options.trigger, "ineffective", exc.tokens_before, exc.tokens_after
            )
            raise
        if outcome.summary is not None:
            self.observer.summarizer_attempts(provider, outcome.summary.attempts, ok=True)
        wanted = options.force or outcome.counted.should_compact
        if outcome.compacted:
            label = "compacted"
        else:
            label = "nothing_to_compact" if wanted else "not_needed"
        self.observer.compaction_finished(
            options.trigger, label, outcome.tokens_before, outcome.tokens_after
        )
        return outcome

    async def _compact(
        self,
        history: HistoryInput,
        options: CompactOptions,
        caller_gone: CallerGone,
        counted: CountedHistory | None,
    ) -> CompactionOutcome:
        counted = await _off_loop(self.estimation.parsed, history, counted)
        if options.strategy == SUMMARIZE:
            return await self._summarize_if_due(history, counted, options, caller_gone)
        return await self._clear_first(history, counted, options, caller_gone)

    async def _summarize_if_due(
        self,
        history: HistoryInput,
        counted: CountedHistory,
        options: CompactOptions,
        caller_gone: CallerGone,
    ) -> CompactionOutcome:
        if not options.force and not counted.should_compact:
            return self._not_compacted(counted, options, _under_threshold(counted))
        return await self._summarize(history, counted, counted, options, caller_gone)

    async def _clear_first(
        self,
        history: HistoryInput,
        counted: CountedHistory,
        options: CompactOptions,
        caller_gone: CallerGone,
    ) -> CompactionOutcome:
        """clear_tool_results; and auto: clear first, summarize only if still over."""
        trigger = clearing_trigger(counted, options.clear)
        clears_only = options.strategy == CLEAR_TOOL_RESULTS
        if not options.force and counted.estimate.tokens <= trigger:
            if clears_only:
                reason = (
                    f"under the clearing trigger: {counted.estimate.tokens} tokens is not above "
                    f"{trigger}; pass force=true to clear anyway"
                )
                return self._not_compacted(counted, options, reason)
            return await self._summarize_if_due(history, counted, options, caller_gone)
        cleared = await _off_loop(clear_history, self.estimation, history, counted, options.clear)
        if cleared.history is None or cleared.counted is None:
            if clears_only:
                return self._not_compacted(counted, options, cleared.plan.reason)
            return await self._summarize_if_due(history, counted, options, caller_gone)
        outcome = self._cleared(counted, cleared, options)
        if clears_only or not cleared.counted.should_compact:
            return outcome
        try:
            summarized = await self._summarize(
                cleared.history, cleared.counted, counted, options, caller_gone
            )
        except IneffectiveCompactionError:
            summarized = outcome
        if not summarized.compacted or summarized.plan is None:
            # Clearing alone shrank the history, and a summary could not add to it.
            return outcome
        return replace(summarized, applied=(CLEAR_TOOL_RESULTS, SUMMARIZE), cleared=outcome.cleared)

    def _not_compacted(
        self, counted: CountedHistory, options: CompactOptions, reason: str | None
    ) -> CompactionOutcome:
        return CompactionOutcome(
            counted=counted, compacted=False, reason=reason, strategy=options.strategy
        )

    def _cleared(
        self, counted: CountedHistory, cleared: ClearedHistory, options: CompactOptions
    ) -> CompactionOutcome:
        assert cleared.history is not None and cleared.counted is not None
        tokens_after = cleared.counted.estimate.tokens
        _refuse_growth(counted, tokens_after, "clearing tool results")
        return CompactionOutcome(
            counted=counted,
            compacted=True,
            messages=list(cleared.history.messages),
            tokens_after=tokens_after,
            strategy=options.strategy,
            applied=(CLEAR_TOOL_RESULTS,),
            cleared=cleared.plan.cleared,
        )

    async def _summarize(
        self,
        history: HistoryInput,
        counted: CountedHistory,
        original: CountedHistory,
        options: CompactOptions,
        caller_gone: CallerGone,
    ) -> CompactionOutcome:
        """Summarizes `history` (counted as `counted`); `original` is what the caller sent."""
        conversation = counted.conversation
        assert conversation is not None
        try:
            plan = await _off_loop(
                plan_compaction,
                conversation.messages,
                counted.per_message,
                counted.settings.keep_recent_tokens,
                counted.inline_system_count,
                self.marker,
            )
        except NothingToCompactError as exc:
            return self._not_compacted(original, options, str(exc))
        skip = options.skip_summary(plan) if options.skip_summary is not None else None
        if skip is not None:
            return self._not_compacted(original, options, skip)
        info = self.summarizer.info
        summary = await summarize_plan(
            plan,
            self.summarizer,
            SummaryOptions(
                output_budget=summary_output_budget(
                    counted.settings.reserve_tokens, info.max_output_tokens
                ),
                thinking=self.starting_level(options.thinking),
                instructions=options.instructions,
            ),
            counted.choice.tokenizer,
            caller_gone,
        )
        finished = await _off_loop(finish_summary, summary.summary, plan, options.pinned)
        summary = replace(summary, summary=finished.text)
        summary_raw = counted.wire.summary_message(self.marker.render(summary.summary))
        raws = list(history.messages)
        new_messages = [
            *raws[: counted.inline_system_count],
            summary_raw,
            *raws[plan.cut_index :],
        ]
        after = await _off_loop(self.counted_after, counted, plan, summary_raw, new_messages)
        tokens_after = after.estimate.tokens
        _refuse_growth(counted, tokens_after, f"the summary of {len(plan.to_summarize)} messages")
        return CompactionOutcome(
            counted=original,
            compacted=True,
            plan=plan,
            summary=summary,
            messages=new_messages,
            tokens_after=tokens_after,
            summarizer=self.summarizer,
            strategy=options.strategy,
            applied=(SUMMARIZE,),
            finished=finished,
            after=after,
        )

    def starting_level(self, requested: ThinkingLevel | None) -> ThinkingLevel:
        """The caller's level (or the configured default), limited to what the model has."""
        level = requested or self.default_thinking
        supported = self.summarizer.info.thinking_levels
        return clamp_level(level, supported) if supported else ThinkingLevel.OFF

    def counted_after(
        self,
        counted: CountedHistory,
        plan: CompactionPlan,
        summary_raw: Any,
        new_messages: list[Any],
    ) -> CountedHistory:
        """The count of the new history, from the parts already counted: only the summary
        message is new (no usage anchor: the old reports are stale)."""
        summary_message = counted.wire.parse_message(summary_raw, "summary")
        summary_tokens = self.estimation.count_new_messages([summary_message], counted.choice)[0]
        conversation = counted.conversation
        assert conversation is not None
        inline, cut = counted.inline_system_count, plan.cut_index
        parsed = conversation.messages
        per = counted.per_message
        return self.estimation.derived(
            counted,
            new_messages,
            [*parsed[:inline], summary_message, *parsed[cut:]],
            [*per[:inline], summary_tokens, *per[cut:]],
        )


async def _off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """CPU-bound steps (counting, planning, clearing) run in a worker thread, so a large
    history does not stall every other request on the event loop (/healthz included)."""
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))


def _describe(span: Span, outcome: CompactionOutcome) -> None:
    span.set_attribute("compactor.compacted", outcome.compacted)
    span.set_attribute("compactor.tokens_before", outcome.tokens_before)
    if outcome.tokens_after is not None:
        span.set_attribute("compactor.tokens_after", outcome.tokens_after)
    span.set_attribute("compactor.strategy", outcome.strategy)


def _under_threshold(counted: CountedHistory) -> str:
    return (
        f"under the threshold: {counted.estimate.tokens} tokens is not above "
        f"{counted.threshold}; pass force=true to compact anyway"
    )


def _refuse_growth(counted: CountedHistory, tokens_after: int, what: str) -> None:
    """The inflation guard: a compaction must leave the history smaller than it found it,
    by the caller's count (usage anchored) and by the plain estimate alike."""
    estimate = counted.estimate
    before = min(estimate.tokens, estimate.system + estimate.tools + estimate.messages)
    if tokens_after >= before:
        raise IneffectiveCompactionError(
            f"compaction refused: {what} would leave the history at {tokens_after} tokens, "
            f"not below the {before} tokens it has now, so nothing was changed; compact "
            "again once more history has accumulated, or lower keep_recent_tokens",
            tokens_before=before,
            tokens_after=tokens_after,
        )
