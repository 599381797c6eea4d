"""Serialization, prompts, the marker and the model registry (SPEC §3, §5.3–5.7)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from app.engine.compaction.marker import SUMMARY_MARKER, SummaryMarker
from app.engine.compaction.orchestration import SummaryOptions, plan_compaction, summarize_plan
from app.engine.compaction.prompts import (
    SUMMARIZER_SYSTEM_PROMPT,
    SUMMARY_CACHE_KEY,
    SUMMARY_SECTIONS,
    build_summary_prompt,
    build_summary_prompt_parts,
)
from app.engine.compaction.serialize import serialize_for_summary
from app.engine.errors import EmptySummaryError, SummaryTruncatedError
from app.engine.messages import Block, BlockKind, ImageInfo, Message, Role
from app.engine.ports import SummarizerInfo, SummaryRequest, SummaryResult
from app.engine.thinking import ThinkingLevel
from app.registry import load_registry
from app.tokenizers.bpe import CharsPerTokenTokenizer
from tests.unit.factories import assistant, tool, user


def test_serialization_labels_roles_calls_results_and_truncates_long_results() -> None:
    thinking = Message(
        role=Role.ASSISTANT,
        blocks=(
            Block(kind=BlockKind.THINKING, text="consider the sum"),
            Block(
                kind=BlockKind.TOOL_CALL, tool_call_id="t1", tool_name="bash", arguments='{"c":1}'
            ),
        ),
    )
    image = Message(role=Role.USER, blocks=(Block(kind=BlockKind.IMAGE, image=ImageInfo(10, 10)),))
    text = serialize_for_summary(
        [user("fix sum()"), thinking, tool("t1", "x" * 2_500), image], tool_result_limit=2_000
    )
    assert "[User]: fix sum()" in text
    assert "[Assistant thinking]: consider the sum" in text
    assert '[Assistant tool call]: bash({"c":1})' in text
    assert "[Tool result: bash]: " + "x" * 2_000 in text
    assert "[... 500 more characters truncated]" in text
    assert "x" * 2_001 not in text
    assert "[User]: [image]" in text


def test_the_instructions_ask_for_every_section_in_order() -> None:
    # The format lives in the system prompt, the same for a first summary and an update.
    positions = [SUMMARIZER_SYSTEM_PROMPT.index(section) for section in SUMMARY_SECTIONS]
    assert positions == sorted(positions)
    assert "- [x]" in SUMMARIZER_SYSTEM_PROMPT and "- [ ]" in SUMMARIZER_SYSTEM_PROMPT
    assert "1." in SUMMARIZER_SYSTEM_PROMPT
    assert "file paths" in SUMMARIZER_SYSTEM_PROMPT
    assert "error\nmessages verbatim" in SUMMARIZER_SYSTEM_PROMPT
    assert "do not continue" in SUMMARIZER_SYSTEM_PROMPT.lower()
    prompt = build_summary_prompt("[User]: hi", None, None)
    assert "<previous-summary>" not in prompt
    assert prompt.startswith("<conversation>\n[User]: hi\n</conversation>")
    assert "Summarize the conversation above" in prompt


def test_update_prompt_carries_the_previous_summary_first_and_the_focus_last() -> None:
    parts = build_summary_prompt_parts("[User]: more", "## Goal\nold goal", "focus on tests")
    # Most stable first: the previous summary, then the conversation and the task.
    assert parts[0] == "<previous-summary>\n## Goal\nold goal\n</previous-summary>"
    assert parts[1].startswith("<conversation>\n[User]: more\n</conversation>")
    prompt = build_summary_prompt("[User]: more", "## Goal\nold goal", "focus on tests")
    assert prompt == "\n\n".join(parts)
    for phrase in ("keep all information", "move items", "Next Steps", "no longer relevant"):
        assert phrase in prompt
        assert phrase in SUMMARIZER_SYSTEM_PROMPT
    assert prompt.rstrip().endswith("focus on tests")


def test_every_summary_call_starts_with_the_same_instructions() -> None:
    calls: list[SummaryRequest] = []

    class Recording:
        info = SummarizerInfo("fake", "fake")

        async def summarize(self, request: SummaryRequest) -> SummaryResult:
            calls.append(request)
            return SummaryResult("## Goal\n- go on")

    options = SummaryOptions(output_budget=1000, thinking=ThinkingLevel.OFF)
    first = plan_compaction([user("a" * 100), assistant("b"), user("c")], [30, 5, 5], 10)
    asyncio.run(summarize_plan(first, Recording(), options, CharsPerTokenTokenizer()))
    summary = SummaryMarker().render("## Goal\n- go on")
    update = plan_compaction(
        [user(summary), user("d" * 100), assistant("e"), user("f")], [30, 30, 5, 5], 10
    )
    focused = SummaryOptions(output_budget=1000, thinking=ThinkingLevel.OFF, instructions="x")
    asyncio.run(summarize_plan(update, Recording(), focused, CharsPerTokenTokenizer()))
    assert [c.system_prompt for c in calls] == [SUMMARIZER_SYSTEM_PROMPT] * 2
    assert calls[0].cache_key == calls[1].cache_key == SUMMARY_CACHE_KEY
    assert calls[0].stable_parts == 0
    assert calls[1].stable_parts == 1
    assert calls[1].prompt_parts[0].startswith("<previous-summary>")


def test_marker_round_trip_and_only_text_user_messages_count() -> None:
    marker = SummaryMarker()
    text = marker.render("## Goal\nx")
    assert text.startswith("[Context summary") and "]\n\n" in text
    assert text.split("\n", 1)[0] == SUMMARY_MARKER
    assert marker.previous_summary(user(text)) == "## Goal\nx"
    assert marker.previous_summary(assistant(text)) is None
    assert marker.previous_summary(user("[Context summary without the blank line]")) is None
    assert marker.previous_summary(tool("t", text)) is None


class ScriptedSummarizer:
    def __init__(self, results: list[SummaryResult], levels: tuple[ThinkingLevel, ...]) -> None:
        self.results = results
        self.requests: list[SummaryRequest] = []
        self.info = SummarizerInfo(provider="fake", model="m", thinking_levels=levels)

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.requests.append(request)
        return self.results.pop(0)


def _plan() -> object:
    messages = [user("a" * 100), assistant("b" * 100), user("c"), assistant("d")]
    return plan_compaction(messages, [30, 30, 5, 5], keep_recent_tokens=10)


def _run(summarizer: ScriptedSummarizer, level: ThinkingLevel, gone: bool = False) -> object:
    options = SummaryOptions(output_budget=26_214, thinking=level)
    plan = _plan()
    return asyncio.run(
        summarize_plan(plan, summarizer, options, CharsPerTokenTokenizer(), lambda: gone)  # type: ignore[arg-type]
    )


def test_truncated_first_attempt_retries_once_at_the_lowest_level_same_input() -> None:
    levels = (ThinkingLevel.OFF, ThinkingLevel.LOW, ThinkingLevel.HIGH)
    fake = ScriptedSummarizer(
        [SummaryResult("part", truncated=True), SummaryResult("## Goal")], levels
    )
    outcome = _run(fake, ThinkingLevel.HIGH)
    assert [r.thinking for r in fake.requests] == [ThinkingLevel.HIGH, ThinkingLevel.OFF]
    assert fake.requests[0].prompt == fake.requests[1].prompt
    assert fake.requests[0].max_output_tokens == fake.requests[1].max_output_tokens == 26_214
    assert outcome.attempts == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("results", "levels", "level", "error"),
    [
        ([SummaryResult("p", truncated=True)], (), ThinkingLevel.OFF, SummaryTruncatedError),
        (
            [SummaryResult("p", truncated=True), SummaryResult("p", truncated=True)],
            (ThinkingLevel.OFF, ThinkingLevel.HIGH),
            ThinkingLevel.HIGH,
            SummaryTruncatedError,
        ),
        ([SummaryResult("   ")], (), ThinkingLevel.OFF, EmptySummaryError),
    ],
)
def test_truncated_or_empty_summaries_fail(
    results: list[SummaryResult],
    levels: tuple[ThinkingLevel, ...],
    level: ThinkingLevel,
    error: type[Exception],
) -> None:
    with pytest.raises(error):
        _run(ScriptedSummarizer(results, levels), level)


def test_no_retry_when_the_caller_is_gone() -> None:
    from app.engine.errors import CallerGoneError

    fake = ScriptedSummarizer(
        [SummaryResult("p", truncated=True), SummaryResult("ok")],
        (ThinkingLevel.OFF, ThinkingLevel.HIGH),
    )
    options = SummaryOptions(output_budget=100, thinking=ThinkingLevel.HIGH)
    # Present when the chunk starts, gone by the time the truncated answer arrives.
    answers = iter([False, True])
    with pytest.raises(CallerGoneError):
        asyncio.run(
            summarize_plan(
                _plan(),  # type: ignore[arg-type]
                fake,
                options,
                CharsPerTokenTokenizer(),
                lambda: next(answers),
            )
        )
    assert len(fake.requests) == 1


def test_registry_resolves_prefixes_and_accepts_an_override_file(tmp_path: Path) -> None:
    registry = load_registry()
    assert registry.resolve("gpt-4o-mini-2024-07-18").name == "gpt-4o-mini"
    assert registry.resolve("claude-sonnet-4-5-20250929").context_window == 200_000
    unknown = registry.resolve("my-local-model")
    assert not unknown.known and unknown.encoding == "o200k_base" and not unknown.exact
    extra = tmp_path / "models.json"
    extra.write_text(
        json.dumps({"models": {"my-local": {"provider": "ollama", "context_window": 32_768}}})
    )
    overridden = load_registry(extra, fallback_window=64_000)
    assert overridden.resolve("my-local-model").context_window == 32_768
    assert overridden.fallback_window == 64_000


def test_a_long_request_already_in_the_goal_is_not_quoted_again() -> None:
    from app.engine.compaction.split_turn import (
        CURRENT_REQUEST_HEADING,
        split_turn_request,
        with_current_request,
    )
    from app.engine.extractive.summarizer import ExtractiveSummarizer

    request = "Refactor the parser so that " + "every token keeps its source span. " * 45
    folded = [user(request), assistant("", ("t1", "read")), tool("t1", "source")]
    kept = [assistant("Now editing the parser.")]
    summarizer = ExtractiveSummarizer()
    summary_request = SummaryRequest(
        system_prompt="",
        prompt_parts=(),
        messages=tuple(folded),
        previous_summary=None,
        instructions=None,
        max_output_tokens=1000,
        thinking=ThinkingLevel.OFF,
    )
    summary = asyncio.run(summarizer.summarize(summary_request)).text
    final = with_current_request(summary, split_turn_request(folded, kept, None))
    assert CURRENT_REQUEST_HEADING not in final
    assert len(final) < len(request) + 1_000
