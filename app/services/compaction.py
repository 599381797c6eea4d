"""The /compact use case: decide, plan, summarize, rebuild the history in its format."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol, TypeVar

import anyio

from app.engine.clearing import DEFAULT_CLEAR_STEP_TOKENS, step_under
from app.engine.compaction.deeper_cut import deeper_plan
from app.engine.compaction.fidelity import finish_summary
from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.orchestration import (
    CompactionPlan,
    SummaryOptions,
    SummaryOutcome,
    plan_compaction,
    summarize_plan,
)
from app.engine.compaction.strategy import DEFAULT_STRATEGY, CompactionStep
from app.engine.compaction.thresholds import summary_output_budget
from app.engine.errors import (
    CallerGoneError,
    IneffectiveCompactionError,
    NothingToCompactError,
    SummarizerError,
)
from app.engine.ports import CallerGone, Summarizer
from app.engine.thinking import ThinkingLevel, clamp_level
from app.services.clearing import ClearedHistory, clear_history
from app.services.compaction_log import log_compaction, log_compaction_failed
from app.services.compaction_outcome import CompactionOutcome
from app.services.estimation import CountedHistory, EstimationService
from app.services.history import CompactOptions, HistoryInput
from app.services.strategies.protocol import CompactionJob
from app.services.strategies.registry import STRATEGIES, strategy_for
from app.services.tracing import NullTracer, Span, Tracer

__all__ = ["CompactionObserver", "CompactionOutcome", "CompactionService", "NullObserver"]

T = TypeVar("T")


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


@dataclass(eq=False)
class CompactionService:
    """Compacts one history with the configured summarizer."""

    estimation: EstimationService
    summarizer: Summarizer
    default_thinking: ThinkingLevel = ThinkingLevel.OFF
    marker: SummaryMarker = field(default_factory=SummaryMarker)
    observer: CompactionObserver = field(default_factory=NullObserver)
    tracer: Tracer = field(default_factory=NullTracer)
    # The strategies' clearing moves in cache-aware steps of this many tokens
    # (app.engine.clearing); 0 clears by the per-request rule (COMPACTOR_CLEARING=exact).
    clear_step_tokens: int = DEFAULT_CLEAR_STEP_TOKENS

    async def compact(
        self,
        history: HistoryInput,
        options: CompactOptions,
        caller_gone: CallerGone = lambda: False,
        counted: CountedHistory | None = None,
    ) -> CompactionOutcome:
        """Compacts when over the threshold (or forced); never returns a partial result.

        `counted` is `history` already counted (the caller decided on it): not counted
        again. A compaction that changed the history writes one log line (compaction_log)."""
        started = time.perf_counter()
        attributes = {"compactor.trigger": options.trigger}
        info = self.summarizer.info
        with self.tracer.span("compaction", attributes=attributes) as span:
            try:
                outcome = await self._observed(history, options, caller_gone, counted)
            except SummarizerError as exc:
                log_compaction_failed(
                    trigger=options.trigger,
                    error=type(exc).__name__,
                    summarizer=f"{info.provider}/{info.model}",
                    duration_ms=(time.perf_counter() - started) * 1000,
                    subject=options.subject,
                )
                raise
            _describe(span, outcome)
        if outcome.compacted:
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
                over_threshold=_still_over(outcome),
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
            # Planning and clearing read the normalized messages; a caller's counts stay,
            # with the settings of `history` (a caller may have changed keep-recent).
            counted = await _off_loop(self.estimation.parsed, history, counted)
            name = strategy_for(options.strategy, counted)
            job = CompactionJob(history, counted, replace(options, strategy=name), caller_gone)
            outcome = await STRATEGIES.get(name).compact(self, job)
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
        if outcome.compacted and _still_over(outcome) and options.deepen:
            # Even the deeper cut left it over the threshold: said once, loudly (the
            # session records it and pauses automatic compaction until new entries).
            label = "over_threshold"
        elif outcome.compacted:
            label = "compacted"
        else:
            label = "nothing_to_compact" if wanted else "not_needed"
        self.observer.compaction_finished(
            options.trigger, label, outcome.tokens_before, outcome.tokens_after
        )
        return outcome

    async def summarize_if_due(self, job: CompactionJob) -> CompactionOutcome:
        """Summarizes when over the threshold (or forced); else not compacted."""
        if not job.options.force and not job.counted.should_compact:
            return self.not_compacted(job, _under_threshold(job.counted))
        return await self.summarize(job, job.counted)

    async def clear(self, job: CompactionJob) -> ClearedHistory:
        """Plans (and when it clears anything, applies and counts) tool-result clearing."""
        options = job.options
        # Steps keep a prefix byte-stable across the turns of an agent that resends its
        # history; a compaction the caller forced (manual, overflow, a forced /compact)
        # clears now by the per-request rule, as asked — except the background one that
        # stands for the automatic compaction to come (prepared ahead).
        asked_now = options.force and options.trigger != "prepare_ahead"
        step = 0 if asked_now else step_under(self.clear_step_tokens, job.counted.threshold)
        settings = replace(options.clear, step_tokens=step)
        return await _off_loop(clear_history, self.estimation, job.history, job.counted, settings)

    def not_compacted(self, job: CompactionJob, reason: str | None) -> CompactionOutcome:
        """The outcome that leaves the history as it is, and why."""
        return _left_as_is(job.counted, job.options, reason)

    def cleared(self, job: CompactionJob, cleared: ClearedHistory) -> CompactionOutcome:
        """The outcome of a clearing that cleared something (refused if it grew)."""
        assert cleared.history is not None and cleared.counted is not None
        tokens_after = cleared.counted.estimate.tokens
        _refuse_growth(job.counted, tokens_after, "clearing tool results")
        return CompactionOutcome(
            counted=job.counted,
            compacted=True,
            messages=list(cleared.history.messages),
            tokens_after=tokens_after,
            strategy=job.options.strategy or DEFAULT_STRATEGY,
            applied=(CompactionStep.CLEAR_TOOL_RESULTS,),
            cleared=cleared.plan.cleared,
            counted_after=cleared.counted,
        )

    async def summarize(self, job: CompactionJob, original: CountedHistory) -> CompactionOutcome:
        """Summarizes the job's history; `original` is the count of what the caller sent.

        With `options.deepen` (a session), a cut whose result would be over the threshold
        is made deeper once (app.engine.compaction.deeper_cut): before the summarizer is
        called when the kept tail alone is too large, else after the summary came back
        too large (one more call, on a deeper cut: never the same call twice)."""
        counted, options = job.counted, job.options
        conversation = counted.conversation
        assert conversation is not None
        inline = counted.inline_system_count
        try:
            plan = await _off_loop(
                plan_compaction,
                conversation.messages,
                counted.per_message,
                counted.settings.keep_recent_tokens,
                inline,
                self.marker,
            )
        except NothingToCompactError as exc:
            return _left_as_is(original, options, str(exc))
        deepened = False
        if options.deepen:
            # The previous summary's size stands for the new one's, until it is written.
            previous = counted.per_message[inline] if plan.previous_summary is not None else 0
            deeper = self._deeper(counted, plan, previous)
            if deeper is not None:
                plan, deepened = deeper, True
        skip = options.skip_summary(plan) if options.skip_summary is not None else None
        if skip is not None:
            return _left_as_is(original, options, skip)
        try:
            outcome = await self._summarized(job, original, plan)
        except IneffectiveCompactionError as exc:
            # A summary that does not shrink the history: a deeper cut folds more.
            if not options.deepen or deepened:
                raise
            kept = counted.estimate.tokens - sum(counted.per_message[inline : plan.cut_index])
            deeper = self._deeper(counted, plan, exc.tokens_after - kept)
            if deeper is None or (options.skip_summary and options.skip_summary(deeper)):
                raise
            return await self._summarized(job, original, deeper)
        after = outcome.counted_after
        if not options.deepen or deepened or after is None or not after.should_compact:
            return outcome
        deeper = self._deeper(counted, plan, after.per_message[inline])
        if deeper is None or (options.skip_summary and options.skip_summary(deeper)):
            return outcome
        try:
            again = await self._summarized(job, original, deeper)
        except IneffectiveCompactionError:
            return outcome
        if again.summary is None or outcome.summary is None:
            return again
        # Both calls were made (and are billed) for this compaction.
        usage = outcome.summary.usage.plus(again.summary.usage)
        return replace(again, summary=replace(again.summary, usage=usage))

    def _deeper(
        self, counted: CountedHistory, plan: CompactionPlan, summary_tokens: int
    ) -> CompactionPlan | None:
        conversation = counted.conversation
        assert conversation is not None
        return deeper_plan(
            conversation.messages,
            counted.per_message,
            plan,
            counted.estimate.tokens,
            counted.threshold,
            summary_tokens,
            counted.inline_system_count,
            self.marker,
        )

    async def _summarized(
        self, job: CompactionJob, original: CountedHistory, plan: CompactionPlan
    ) -> CompactionOutcome:
        """The outcome of summarizing `plan` (refused if the history grew)."""
        history, counted, options = job.history, job.counted, job.options
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
            job.caller_gone,
            options.progress,
        )
        finished = await _off_loop(finish_summary, summary.summary, plan, options.pinned)
        summary = replace(summary, summary=finished.text)
        summary_raw = counted.wire.summary_message(
            self.marker.render(summary.summary, options.recall_session)
        )
        raws = list(history.messages)
        inline = counted.inline_system_count
        new_messages = [*raws[:inline], summary_raw, *raws[plan.cut_index :]]
        # The kept messages keep their counts; only the summary is counted.
        summary_message = counted.wire.parse_message(summary_raw, "summary")
        after = await _off_loop(
            self.estimation.replaced, counted, inline, plan.cut_index, [summary_message]
        )
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
            strategy=options.strategy or DEFAULT_STRATEGY,
            applied=(CompactionStep.SUMMARIZE,),
            finished=finished,
            counted_after=after,
        )

    async def summarize_all(
        self,
        history: HistoryInput,
        instructions: str | None,
        caller_gone: CallerGone = lambda: False,
    ) -> SummaryOutcome:
        """One summary of every message of `history` after its inline system prompt (a
        previous summary there is updated), keeping none verbatim: an on-demand
        compaction, whose caller decides what to send after it. NothingToCompactError
        when there is nothing but the system prompt and a previous summary."""
        counted = await _off_loop(self.estimation.parsed, history, None)
        conversation = counted.conversation
        assert conversation is not None
        messages = conversation.messages
        start = counted.inline_system_count
        previous = self.marker.previous_summary(messages[start]) if len(messages) > start else None
        if previous is not None:
            start += 1
        if start >= len(messages):
            raise NothingToCompactError("nothing to summarize: the history holds no message")
        plan = CompactionPlan(
            first_summarized=start,
            cut_index=len(messages),
            previous_summary=previous,
            to_summarize=tuple(messages[start:]),
            kept=(),
        )
        options = SummaryOptions(
            output_budget=summary_output_budget(
                counted.settings.reserve_tokens, self.summarizer.info.max_output_tokens
            ),
            thinking=self.starting_level(None),
            instructions=instructions,
        )
        provider = self.summarizer.info.provider
        try:
            summary = await summarize_plan(
                plan, self.summarizer, options, counted.choice.tokenizer, caller_gone
            )
        except SummarizerError as exc:
            self.observer.summarizer_failed(provider, type(exc).__name__)
            raise
        self.observer.summarizer_attempts(provider, summary.attempts, ok=True)
        finished = await _off_loop(finish_summary, summary.summary, plan, ())
        return replace(summary, summary=finished.text)

    def starting_level(self, requested: ThinkingLevel | None) -> ThinkingLevel:
        """The caller's level (or the configured default), limited to what the model has."""
        level = requested or self.default_thinking
        supported = self.summarizer.info.thinking_levels
        return clamp_level(level, supported) if supported else ThinkingLevel.OFF


def _describe(span: Span, outcome: CompactionOutcome) -> None:
    span.set_attribute("compactor.compacted", outcome.compacted)
    span.set_attribute("compactor.tokens_before", outcome.tokens_before)
    if outcome.tokens_after is not None:
        span.set_attribute("compactor.tokens_after", outcome.tokens_after)
    span.set_attribute("compactor.strategy", outcome.strategy)


async def _off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """CPU-bound steps (counting, planning, clearing) run in a worker thread, so a large
    history does not stall every other request on the event loop (/healthz included)."""
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))


def _left_as_is(
    counted: CountedHistory, options: CompactOptions, reason: str | None
) -> CompactionOutcome:
    return CompactionOutcome(
        counted=counted,
        compacted=False,
        reason=reason,
        strategy=options.strategy or DEFAULT_STRATEGY,
    )


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


def _still_over(outcome: CompactionOutcome) -> bool:
    """True when a compaction left the history over its threshold."""
    after = outcome.counted_after
    return after is not None and after.should_compact
