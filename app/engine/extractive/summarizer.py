"""The default summarizer (SPEC §5.8, §14): offline, deterministic, built from the transcript.

It fills the SPEC §5.4 sections from the messages themselves and merges them into the
previous summary: the task and later requests, the user's rules and facts (a changed value
replaces the old one, quoted as replaced), files touched, the first and the newest errors,
and the next steps the user and the assistant stated. Every section has a token budget, so
the summary stays far smaller than the history however many rounds it goes through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from app.engine.compaction.marker import SummaryMarker
from app.engine.extractive.budget import DEFAULT_BUDGETS, SectionBudgets
from app.engine.extractive.foreign import read_foreign_summary
from app.engine.extractive.merge import Merged, merge
from app.engine.extractive.sections import (
    SummarySections,
    parse_summary,
    render_summary,
    written_by_us,
)
from app.engine.extractive.transcript import read_transcript
from app.engine.messages import Message
from app.engine.ports import SummarizerInfo, SummaryRequest, SummaryResult

_INFO = SummarizerInfo(
    provider="extractive",
    model="extractive-v1",
    context_window=None,
    max_output_tokens=None,
    thinking_levels=(),
    local=True,
)


class ExtractiveSummarizer:
    """A `Summarizer` that needs no model: it extracts the summary from the messages."""

    @property
    def info(self) -> SummarizerInfo:
        """Provider "extractive": no context window, no output limit, no thinking."""
        return _INFO

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Summarize `request.messages`, merged into `request.previous_summary` if given."""
        # Reading a long transcript is CPU work: a worker thread keeps the event loop free.
        text = await asyncio.to_thread(
            extractive_summary, request.messages, request.previous_summary, request.instructions
        )
        return SummaryResult(text=text, truncated=False)


def previous_sections(previous_summary: str | None) -> SummarySections:
    """The sections of a previous summary: ours, an LLM's in our layout, or another agent's."""
    if not previous_summary:
        return SummarySections()
    # Tolerate being handed the whole summary message: the marker line is not content.
    body = SummaryMarker.parse(previous_summary) or previous_summary
    if written_by_us(body):
        return parse_summary(body)
    # Read back as our own summary would be, so a second update changes nothing.
    return parse_summary(render_summary(read_foreign_summary(body)))


def merged_summary(
    messages: Sequence[Message],
    previous_summary: str | None,
    instructions: str | None,
    budgets: SectionBudgets = DEFAULT_BUDGETS,
) -> Merged:
    """The sections of the summary of `messages` after `previous_summary`."""
    merged = _merged(tuple(messages), previous_summary, budgets)
    if not instructions:
        return merged
    focus = merge(SummarySections(), read_transcript(()), instructions, budgets).sections.focus
    return replace(merged, sections=replace(merged.sections, focus=focus))


# The restoration step after every summary reads the same messages again: the last few
# merges are remembered (messages are frozen values, so equal input gives equal output).
@lru_cache(maxsize=4)
def _merged(
    messages: tuple[Message, ...], previous_summary: str | None, budgets: SectionBudgets
) -> Merged:
    return merge(previous_sections(previous_summary), read_transcript(messages), None, budgets)


def extractive_summary(
    messages: Sequence[Message],
    previous_summary: str | None,
    instructions: str | None,
    budgets: SectionBudgets = DEFAULT_BUDGETS,
) -> str:
    """The summary markdown of `messages`, updating `previous_summary` when there is one."""
    merged = merged_summary(messages, previous_summary, instructions, budgets)
    return render_summary(merged.sections)
