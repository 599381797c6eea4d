"""Compaction orchestration (SPEC §5): plan the cut, summarize (in chunks when the
summarizer's window requires), apply the truncation rule, and say what to keep."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace

from app.engine.compaction.cut_point import find_cut_index
from app.engine.compaction.marker import DEFAULT_MARKER, SummaryMarker
from app.engine.compaction.prompts import (
    SUMMARIZER_SYSTEM_PROMPT,
    SUMMARY_CACHE_KEY,
    build_summary_prompt_parts,
)
from app.engine.compaction.serialize import DEFAULT_TOOL_RESULT_LIMIT, serialize_for_summary
from app.engine.errors import (
    CallerGoneError,
    EmptySummaryError,
    NothingToCompactError,
    SummarizerError,
    SummaryTruncatedError,
)
from app.engine.messages import Message
from app.engine.ports import (
    CallerGone,
    ChunkProgress,
    Summarizer,
    SummaryRequest,
    SummaryResult,
    SummaryUsage,
    Tokenizer,
)
from app.engine.thinking import ThinkingLevel, lowest_level

# Room for the prompt's own instructions and tags in a summary call.
PROMPT_OVERHEAD_TOKENS = 1_500


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """Which messages fold into the summary and which stay verbatim."""

    first_summarized: int
    cut_index: int
    previous_summary: str | None
    to_summarize: tuple[Message, ...]
    kept: tuple[Message, ...]


def plan_compaction(
    messages: Sequence[Message],
    per_message: Sequence[int],
    keep_recent_tokens: int,
    inline_system_count: int = 0,
    marker: SummaryMarker = DEFAULT_MARKER,
) -> CompactionPlan:
    """Finds the previous summary (ours or another agent's) and the cut; raises
    NothingToCompactError when no message (besides a previous summary) lies before it."""
    start = inline_system_count
    previous = marker.previous_summary(messages[start]) if len(messages) > start else None
    if previous is not None:
        start += 1
    cut = find_cut_index(messages, per_message, keep_recent_tokens, start)
    if cut <= start:
        raise NothingToCompactError(
            "nothing to compact: the messages after the system prompt"
            f"{' and the previous summary' if previous is not None else ''} fit in "
            f"keep_recent_tokens={keep_recent_tokens}, or no valid cut point lies before them"
        )
    return CompactionPlan(
        first_summarized=start,
        cut_index=cut,
        previous_summary=previous,
        to_summarize=tuple(messages[start:cut]),
        kept=tuple(messages[cut:]),
    )


@dataclass(frozen=True, slots=True)
class SummaryOptions:
    output_budget: int
    thinking: ThinkingLevel
    instructions: str | None = None
    tool_result_limit: int = DEFAULT_TOOL_RESULT_LIMIT


@dataclass(frozen=True, slots=True)
class SummaryOutcome:
    summary: str
    attempts: int
    thinking: ThinkingLevel
    chunks: int
    usage: SummaryUsage


async def summarize_plan(
    plan: CompactionPlan,
    summarizer: Summarizer,
    options: SummaryOptions,
    tokenizer: Tokenizer,
    caller_gone: CallerGone = lambda: False,
    progress: ChunkProgress | None = None,
) -> SummaryOutcome:
    """Writes the summary for `plan`, folding oldest-first chunks when the history does
    not fit the summarizer's window, telling `progress` after each. Never returns a
    partial summary."""
    # Serializing a long history is CPU work: it runs in a worker thread, off the loop.
    chunks = await asyncio.to_thread(
        split_into_chunks, plan.to_summarize, summarizer, options, tokenizer
    )
    if progress is not None:
        progress(0, len(chunks))
    running = plan.previous_summary
    attempts = 0
    thinking = options.thinking
    usage = SummaryUsage()
    for done, chunk in enumerate(chunks):
        if caller_gone():
            raise CallerGoneError("the caller went away before the summary was finished")
        conversation = await asyncio.to_thread(
            serialize_for_summary, chunk, options.tool_result_limit
        )
        request = SummaryRequest(
            system_prompt=SUMMARIZER_SYSTEM_PROMPT,
            prompt_parts=build_summary_prompt_parts(conversation, running, options.instructions),
            messages=tuple(chunk),
            previous_summary=running,
            instructions=options.instructions,
            max_output_tokens=options.output_budget,
            thinking=options.thinking,
            stable_parts=1 if running is not None else 0,
            cache_key=SUMMARY_CACHE_KEY,
        )
        result, used_attempts, thinking = await summarize_with_retry(
            summarizer, request, caller_gone
        )
        attempts += used_attempts
        usage = usage.plus(result.usage)
        running = result.text.strip()
        if progress is not None:
            progress(done + 1, len(chunks))
    assert running is not None  # at least one chunk: the plan is never empty
    return SummaryOutcome(running, attempts, thinking, len(chunks), usage)


async def summarize_with_retry(
    summarizer: Summarizer, request: SummaryRequest, caller_gone: CallerGone
) -> tuple[SummaryResult, int, ThinkingLevel]:
    """One summary call with the chapter's truncation rule.

    Truncated → if the caller is gone, stop; else, only after the first attempt and only
    when the model supports a lower thinking level than the one used, retry once at the
    lowest level with the same input and budget. Still truncated, or empty → fail.
    """
    info = summarizer.info
    result = await summarizer.summarize(request)
    attempts = 1
    level = request.thinking
    if result.truncated:
        if caller_gone():
            raise CallerGoneError("the caller went away; the truncated summary was discarded")
        lowest = lowest_level(info.thinking_levels)
        if lowest is None or lowest.rank >= level.rank:
            raise SummaryTruncatedError(
                f"summary hit the output limit of {request.max_output_tokens} tokens at "
                f"thinking level {level.value} and no lower level is available",
                provider=info.provider,
                model=info.model,
            )
        level = lowest
        discarded = result.usage
        result = await summarizer.summarize(replace(request, thinking=lowest))
        attempts = 2
        # The truncated attempt was paid for too: report what both cost.
        result = replace(result, usage=discarded.plus(result.usage))
        if result.truncated:
            raise SummaryTruncatedError(
                f"summary hit the output limit of {request.max_output_tokens} tokens again "
                f"after retrying at thinking level {lowest.value}",
                provider=info.provider,
                model=info.model,
            )
    if not result.text.strip():
        raise EmptySummaryError(
            "the summarizer returned an empty summary", provider=info.provider, model=info.model
        )
    return result, attempts, result.thinking or level


def split_into_chunks(
    messages: Sequence[Message],
    summarizer: Summarizer,
    options: SummaryOptions,
    tokenizer: Tokenizer,
) -> list[tuple[Message, ...]]:
    """Oldest-first groups that each fit the summarizer's window next to the running
    summary and the reply; one group when the window is unbounded or large enough."""
    window = summarizer.info.context_window
    if window is None:
        return [tuple(messages)]
    # The running summary is at most one output budget long; the reply needs another.
    budget = window - 2 * options.output_budget - PROMPT_OVERHEAD_TOKENS
    if budget <= 0:
        info = summarizer.info
        raise SummarizerError(
            f"summarizer window of {window} tokens cannot hold a summary call with an output "
            f"budget of {options.output_budget} tokens; lower reserve_tokens",
            provider=info.provider,
            model=info.model,
        )
    chunks: list[tuple[Message, ...]] = []
    current: list[Message] = []
    used = 0
    for message in messages:
        cost = tokenizer.count(serialize_for_summary([message], options.tool_result_limit))
        if current and used + cost > budget:
            chunks.append(tuple(current))
            current, used = [], 0
        # A single message larger than the budget still gets its own chunk; the
        # serializer already truncates tool results, the rest is the provider's to refuse.
        current.append(message)
        used += cost
    if current:
        chunks.append(tuple(current))
    return chunks
