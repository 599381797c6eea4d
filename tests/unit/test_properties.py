"""Property-based tests of compaction (SPEC §2, §5) on random histories in both formats.

Every compacted result must keep tool pairs whole, keep the tail verbatim (the very same
objects), cut at a valid point, and account for every dropped message: it is a leading
system message, the previous summary (folded in through the update path) or one of the
summarized messages. The expected cut is recomputed from the wire messages by an
independent oracle written from SPEC §5.2. A compaction whose summary would not shrink the
history is refused instead (the inflation guard), and only when there was something to fold.
"""

from __future__ import annotations

import asyncio
import copy
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from app.engine.compaction.cut_point import find_cut_index
from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX, SummaryMarker
from app.engine.errors import IneffectiveCompactionError
from app.engine.messages import Block, BlockKind, Message, Role
from app.main import build_state
from app.services.compaction import CompactionOutcome, CompactionService
from app.services.history import CompactOptions, HistoryInput
from app.settings import Settings
from tests.compaction_oracle import (
    assert_no_orphaned_results,
    assert_pairs_on_one_side,
    call_ids,
    is_summary,
    is_valid_cut,
    leading_system_count,
    oracle_candidate,
    oracle_cut,
    result_ids,
)
from tests.strategies import RENDERERS, History, histories, keep_recent_tokens, turn_lists

FORMATS = ["openai", "anthropic"]
# Raise for a deeper run, e.g. PROPERTY_EXAMPLES=3000 (the default keeps the suite quick).
EXAMPLES = int(os.environ.get("PROPERTY_EXAMPLES", "80"))
FAST = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HTTP = settings(
    max_examples=max(12, EXAMPLES // 8),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def service() -> CompactionService:
    state = build_state(Settings(summarizer="extractive"))
    state.tokenizers.warm()
    return state.compaction


# --- running the service ----------------------------------------------------------------


def history_input(
    history: History, messages: list[dict[str, Any]] | None = None, **overrides: Any
) -> HistoryInput:
    fields: dict[str, Any] = {
        "messages": history.messages if messages is None else messages,
        "format": history.format if history.give_format else None,
        "system": history.system,
        "keep_recent_tokens": history.keep_recent_tokens,
        "tokenizer": history.tokenizer,
    }
    return HistoryInput(**{**fields, **overrides})


Result = CompactionOutcome | IneffectiveCompactionError


def run(service: CompactionService, history: HistoryInput, force: bool = True) -> Result:
    try:
        return asyncio.run(service.compact(history, CompactOptions(force=force)))
    except IneffectiveCompactionError as refused:
        return refused


def check_refusal(
    service: CompactionService,
    history: HistoryInput,
    refused: IneffectiveCompactionError,
    previous_summary: str | None,
) -> None:
    """The inflation guard refused: there was something to fold, but its summary would
    not have left the history smaller."""
    event("refused: the summary would not shrink the history")
    messages = list(history.messages)
    counted = service.estimation.count(history)
    start = leading_system_count(messages) + (previous_summary is not None)
    keep = history.keep_recent_tokens
    assert keep is not None
    assert oracle_cut(messages, counted.per_message, keep, start) > start
    assert refused.tokens_after >= refused.tokens_before
    assert refused.tokens_before <= counted.estimate.tokens


def check_outcome(
    service: CompactionService,
    history: HistoryInput,
    outcome: Result,
    previous_summary: str | None,
) -> None:
    """All invariants of one forced (or over-threshold) compaction."""
    if isinstance(outcome, IneffectiveCompactionError):
        check_refusal(service, history, outcome, previous_summary)
        return
    messages = list(history.messages)
    k = leading_system_count(messages)
    start = k + (previous_summary is not None)
    per = outcome.counted.per_message
    keep = history.keep_recent_tokens
    assert keep is not None
    assert len(per) == len(messages)
    expected_cut = oracle_cut(messages, per, keep, start)
    event("compacted" if outcome.compacted else "nothing to compact")
    event("previous summary" if previous_summary is not None else "first summary")
    candidate = oracle_candidate(per, keep, start)
    if candidate is not None and not is_valid_cut(messages[candidate]):
        event("target landed on a tool result")
    if candidate is not None and expected_cut > start and expected_cut != candidate:
        event("cut moved back from the target")

    if not outcome.compacted:
        # 5. Not compacted: the reason says why, nothing was produced, and it was right.
        assert outcome.reason and "nothing to compact" in outcome.reason
        assert outcome.messages is None and outcome.plan is None and outcome.summary is None
        assert expected_cut <= start, f"oracle would cut at {expected_cut} (start {start})"
        return

    plan, summary, out = outcome.plan, outcome.summary, outcome.messages
    assert plan is not None and summary is not None and out is not None
    cut = plan.cut_index
    assert cut == expected_cut
    assert sum(per[cut:]) >= keep

    # 2. The tail is verbatim: the very same objects, after system + one summary message.
    assert len(out) == k + 1 + len(messages) - cut
    assert all(a is b for a, b in zip(out[:k], messages[:k], strict=True))
    assert all(a is b for a, b in zip(out[k + 1 :], messages[cut:], strict=True))
    assert out[k + 1 :] == messages[cut:]

    # 3. The cut is at a valid point.
    assert is_valid_cut(messages[cut])

    # 1. Tool pairs are kept: on one side of the cut in the input, none orphaned in the output.
    assert_pairs_on_one_side(messages, cut)
    assert_no_orphaned_results(out, messages)

    # 4. Nothing lost unsummarized: system | previous summary | to_summarize | tail.
    assert plan.first_summarized == start
    assert start < cut
    assert len(plan.to_summarize) == cut - start
    assert all(m.raw is raw for m, raw in zip(plan.to_summarize, messages[start:cut], strict=True))
    assert all(m.raw is raw for m, raw in zip(plan.kept, messages[cut:], strict=True))
    assert plan.previous_summary == previous_summary
    assert out[k] == {"role": "user", "content": SummaryMarker().render(summary.summary)}
    assert out[k]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert "]\n\n" in out[k]["content"] and summary.summary.strip()
    assert [is_summary(m) for m in out].count(True) == 1
    assert not any(is_summary(m) for m in out[:k])

    # The answer's token count is the estimate of the new history.
    recount = service.estimation.count(
        HistoryInput(
            messages=out,
            format=outcome.counted.format,
            system=history.system,
            tokenizer=history.tokenizer,
        )
    )
    assert outcome.tokens_after == recount.estimate.tokens


# --- properties -------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@FAST
@given(data=st.data())
def test_forced_compaction_keeps_every_invariant(
    service: CompactionService, fmt: str, data: st.DataObject
) -> None:
    history = data.draw(histories(fmt), label="history")
    request = history_input(history)
    before = copy.deepcopy(history.messages)
    outcome = run(service, request)
    assert history.messages == before, "the input history was mutated"
    if isinstance(outcome, IneffectiveCompactionError):
        check_refusal(service, request, outcome, history.previous_summary)
        return
    assert outcome.counted.format == fmt or not any(
        call_ids(m) or result_ids(m) for m in history.messages
    )
    check_outcome(service, request, outcome, history.previous_summary)
    if outcome.compacted and history.previous_goal is not None:
        # The update path folded the previous summary in: its goal survives.
        assert outcome.summary is not None
        assert history.previous_goal in outcome.summary.summary


@pytest.mark.parametrize("fmt", FORMATS)
@FAST
@given(data=st.data())
def test_threshold_decides_unless_forced(
    service: CompactionService, fmt: str, data: st.DataObject
) -> None:
    history = data.draw(histories(fmt), label="history")
    trigger = data.draw(st.integers(1, 30_000), label="trigger_tokens")
    request = history_input(history, trigger_tokens=trigger)
    outcome = run(service, request, force=False)
    if isinstance(outcome, IneffectiveCompactionError):
        assert service.estimation.count(request).estimate.tokens > trigger
        check_refusal(service, request, outcome, history.previous_summary)
        return
    tokens = outcome.counted.estimate.tokens
    assert outcome.counted.should_compact == (tokens > trigger)
    if tokens <= trigger:
        assert not outcome.compacted
        assert outcome.reason and "under the threshold" in outcome.reason
        assert str(tokens) in outcome.reason and str(trigger) in outcome.reason
        assert outcome.messages is None and outcome.plan is None
    else:
        check_outcome(service, request, outcome, history.previous_summary)


@pytest.mark.parametrize("fmt", FORMATS)
@FAST
@given(data=st.data())
def test_compacting_again_updates_the_one_summary(
    service: CompactionService, fmt: str, data: st.DataObject
) -> None:
    history = data.draw(histories(fmt, max_turns=10), label="history")
    first = run(service, history_input(history))
    if isinstance(first, IneffectiveCompactionError):
        first = CompactionOutcome(
            counted=service.estimation.count(history_input(history)), compacted=False
        )
    base = first.messages if first.compacted else history.messages
    assert base is not None
    later = RENDERERS[fmt](data.draw(turn_lists("later", max_turns=6), label="later turns"))
    grown = [*base, *later]
    keep = data.draw(keep_recent_tokens, label="keep_recent_tokens")
    request = history_input(history, messages=grown, keep_recent_tokens=keep)
    second = run(service, request)

    if first.compacted:
        assert first.summary is not None
        previous: str | None = first.summary.summary
    else:
        previous = history.previous_summary
    check_outcome(service, request, second, previous)
    if isinstance(second, IneffectiveCompactionError):
        return
    result = second.messages if second.compacted else grown
    assert result is not None
    expected_summaries = int(previous is not None or second.compacted)
    assert [is_summary(m) for m in result].count(True) == expected_summaries
    if second.compacted and previous is not None:
        assert second.plan is not None and second.plan.previous_summary == previous


# --- find_cut_index on arbitrary message sequences --------------------------------------

_IDS = st.sampled_from(["a", "b", "c", "d", "e"])


@st.composite
def engine_messages(draw: st.DrawFn) -> Message:
    """Any message shape, well-formed or not: calls and results with ids from a small pool
    (so ids repeat, results precede calls, calls go unanswered)."""
    role = draw(st.sampled_from(list(Role)))
    blocks: list[Block] = []
    if draw(st.booleans()):
        blocks.append(Block(kind=BlockKind.TEXT, text="t"))
    if role is Role.ASSISTANT:
        for call_id in draw(st.lists(_IDS, max_size=3, unique=True)):
            blocks.append(Block(kind=BlockKind.TOOL_CALL, tool_call_id=call_id, tool_name="f"))
    if role is Role.TOOL or (role is Role.USER and draw(st.booleans())):
        for call_id in draw(
            st.lists(_IDS, min_size=int(role is Role.TOOL), max_size=2, unique=True)
        ):
            blocks.append(Block(kind=BlockKind.TOOL_RESULT, tool_call_id=call_id))
    return Message(role=role, blocks=tuple(blocks))


def _wire(message: Message) -> dict[str, Any]:
    """The engine message as an OpenAI-ish dict, for the wire-level oracle."""
    wire: dict[str, Any] = {"role": message.role.value}
    if message.tool_call_ids:
        wire["tool_calls"] = [{"id": i} for i in message.tool_call_ids]
    wire["content"] = [{"type": "tool_result", "tool_use_id": i} for i in message.tool_result_ids]
    return wire


@settings(max_examples=4 * EXAMPLES, deadline=None)
@given(
    data=st.data(),
    messages=st.lists(engine_messages(), max_size=14),
    keep=st.integers(0, 120),
)
def test_find_cut_index_matches_the_spec_oracle(
    data: st.DataObject, messages: list[Message], keep: int
) -> None:
    per = data.draw(
        st.lists(st.integers(0, 40), min_size=len(messages), max_size=len(messages)), label="per"
    )
    start = data.draw(st.integers(0, len(messages)), label="start")
    cut = find_cut_index(messages, per, keep, start)
    wire = [_wire(m) for m in messages]
    assert cut == max(start, oracle_cut(wire, per, keep, start))
    if cut > start:
        assert messages[cut].is_valid_cut_point
        assert sum(per[cut:]) >= keep
        assert_pairs_on_one_side(wire, cut)
    else:
        assert cut == start
