"""The /compact use case: decide, plan, summarize, rebuild the history in its format."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from app.engine.compaction import (
    CompactionPlan,
    SummaryOptions,
    SummaryOutcome,
    plan_compaction,
    summarize_plan,
)
from app.engine.errors import CallerGoneError, NothingToCompactError, SummarizerError
from app.engine.marker import SummaryMarker
from app.engine.ports import CallerGone, Summarizer
from app.engine.thinking import ThinkingLevel, clamp_level
from app.engine.thresholds import summary_output_budget
from app.services.estimation import FORMATS, CountedHistory, EstimationService
from app.services.history import CompactOptions, HistoryInput


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
    ) -> None:
        self.estimation = estimation
        self.summarizer = summarizer
        self.default_thinking = default_thinking
        self.marker = marker or SummaryMarker()
        self.observer: CompactionObserver = observer or NullObserver()

    async def compact(
        self,
        history: HistoryInput,
        options: CompactOptions,
        caller_gone: CallerGone = lambda: False,
    ) -> CompactionOutcome:
        """Compacts when over the threshold (or forced); never returns a partial result."""
        provider = self.summarizer.info.provider
        try:
            outcome = await self._compact(history, options, caller_gone)
        except SummarizerError as exc:
            self.observer.summarizer_failed(provider, type(exc).__name__)
            self.observer.summarizer_attempts(provider, 1, ok=False)
            self.observer.compaction_finished(options.trigger, "failed", 0, None)
            raise
        except CallerGoneError:
            self.observer.compaction_finished(options.trigger, "abandoned", 0, None)
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
    ) -> CompactionOutcome:
        counted = self.estimation.count(history, parse_all=True)
        if not options.force and not counted.should_compact:
            return CompactionOutcome(
                counted=counted,
                compacted=False,
                reason=(
                    f"under the threshold: {counted.estimate.tokens} tokens is not above "
                    f"{counted.threshold}; pass force=true to compact anyway"
                ),
            )
        conversation = counted.conversation
        assert conversation is not None
        try:
            plan = plan_compaction(
                conversation.messages,
                counted.per_message,
                counted.settings.keep_recent_tokens,
                counted.inline_system_count,
            )
        except NothingToCompactError as exc:
            return CompactionOutcome(counted=counted, compacted=False, reason=str(exc))
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
        summary_raw = FORMATS[counted.format].summary_message(self.marker.render(summary.summary))
        raws = list(history.messages)
        new_messages = [
            *raws[: counted.inline_system_count],
            summary_raw,
            *raws[plan.cut_index :],
        ]
        return CompactionOutcome(
            counted=counted,
            compacted=True,
            plan=plan,
            summary=summary,
            messages=new_messages,
            tokens_after=self.tokens_after(counted, plan, summary_raw),
            summarizer=self.summarizer,
        )

    def starting_level(self, requested: ThinkingLevel | None) -> ThinkingLevel:
        """The caller's level (or the configured default), limited to what the model has."""
        level = requested or self.default_thinking
        supported = self.summarizer.info.thinking_levels
        return clamp_level(level, supported) if supported else ThinkingLevel.OFF

    def tokens_after(self, counted: CountedHistory, plan: CompactionPlan, summary_raw: Any) -> int:
        """Estimate of the new history (no usage anchor: the old reports are stale)."""
        parser = FORMATS[counted.format]
        summary_message = parser.parse_message(summary_raw, "summary")
        summary_tokens = self.estimation.count_new_messages([summary_message], counted.choice)[0]
        per = counted.per_message
        return (
            counted.system_tokens
            + sum(per[: counted.inline_system_count])
            + counted.tools_tokens
            + summary_tokens
            + sum(per[plan.cut_index :])
            + counted.reply_priming
        )
