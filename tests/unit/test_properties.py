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
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pytest
from fastapi.testclient import TestClient
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


# --- reading wire messages (independently of the app's parsers) --------------------------


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def call_ids(message: dict[str, Any]) -> list[str]:
    ids = [call["id"] for call in message.get("tool_calls") or []]
    return ids + [b["id"] for b in _blocks(message) if b.get("type") == "tool_use"]


def result_ids(message: dict[str, Any]) -> list[str]:
    ids = [message["tool_call_id"]] if "tool_call_id" in message else []
    return ids + [b["tool_use_id"] for b in _blocks(message) if b.get("type") == "tool_result"]


def is_valid_cut(message: dict[str, Any]) -> bool:
    return message.get("role") in ("user", "assistant") and not result_ids(message)


def is_summary(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, list):
        content = content[0].get("text") if content and isinstance(content[0], dict) else None
    return (
        message.get("role") == "user"
        and isinstance(content, str)
        and content.startswith(SUMMARY_MARKER_PREFIX)
    )


def leading_system_count(messages: Sequence[dict[str, Any]]) -> int:
    count = 0
    while count < len(messages) and messages[count].get("role") in ("system", "developer"):
        count += 1
    return count


def tool_pairs(messages: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
    """(call index, result index): a result answers the newest unanswered call of its id."""
    unanswered: dict[str, list[int]] = defaultdict(list)
    pairs: list[tuple[int, int]] = []
    for index, message in enumerate(messages):
        for call_id in result_ids(message):
            if unanswered[call_id]:
                pairs.append((unanswered[call_id].pop(), index))
        for call_id in call_ids(message):
            unanswered[call_id].append(index)
    return pairs


def oracle_candidate(per_message: Sequence[int], keep: int, start: int) -> int | None:
    """The newest index (not before `start`) where the kept sum reaches `keep`."""
    kept = 0
    for index in range(len(per_message) - 1, start - 1, -1):
        kept += per_message[index]
        if kept >= keep:
            return index
    return None


def oracle_cut(
    messages: Sequence[dict[str, Any]], per_message: Sequence[int], keep: int, start: int
) -> int:
    """SPEC §5.2 from scratch: from the newest index where the kept sum reaches `keep`, the
    newest valid cut point at or before it that separates no call from its result.
    A result `<= start` means nothing to compact."""
    candidate = oracle_candidate(per_message, keep, start)
    if candidate is None:
        return start
    pairs = tool_pairs(messages)
    for cut in range(candidate, start, -1):
        splits = any(call < cut <= result for call, result in pairs)
        if is_valid_cut(messages[cut]) and not splits:
            return cut
    return start


def assert_pairs_on_one_side(messages: Sequence[dict[str, Any]], cut: int) -> None:
    for call, result in tool_pairs(messages):
        assert (call < cut) == (result < cut), f"pair {call}->{result} split by cut {cut}"


def assert_no_orphaned_results(
    output: Sequence[dict[str, Any]], original: Sequence[dict[str, Any]]
) -> None:
    """Every result in `output` whose call exists in `original` has that call before it."""
    had_call = {call_id for message in original for call_id in call_ids(message)}
    calls: set[str] = set()
    for message in output:
        calls.update(call_ids(message))
        for result in result_ids(message):
            if result in had_call:
                assert result in calls, f"result {result} lost its call in the output"


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


# --- through HTTP -----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@HTTP
@given(data=st.data())
def test_http_compact_keeps_the_invariants(
    client: TestClient, fmt: str, data: st.DataObject
) -> None:
    history = data.draw(histories(fmt, max_turns=10), label="history")
    body: dict[str, Any] = {
        "messages": history.messages,
        "system": history.system,
        "force": True,
        "keep_recent_tokens": history.keep_recent_tokens,
        "tokenizer": history.tokenizer,
    }
    if history.give_format:
        body["format"] = fmt
    response = client.post("/compact", json=body)
    messages = history.messages
    k = history.system_count
    start = k + (history.previous_summary is not None)
    estimate_body = {key: value for key, value in body.items() if key != "force"}
    estimate = client.post("/estimate", json=estimate_body)
    per = estimate.json()["per_message"]
    expected_cut = oracle_cut(messages, per, history.keep_recent_tokens, start)
    if response.status_code == 409:
        # The inflation guard: something to fold, but its summary would not shrink it.
        assert response.json()["type"].endswith("/compaction-ineffective")
        assert expected_cut > start
        return
    assert response.status_code == 200, response.text
    out = response.json()
    if not out["compacted"]:
        assert "nothing to compact" in out["reason"]
        assert out["messages"] == messages and out["summary"] is None
        assert expected_cut <= start
        return
    cut = out["cut_index"]
    new = out["messages"]
    assert cut == expected_cut and is_valid_cut(messages[cut])
    assert new[:k] == messages[:k]
    assert new[k + 1 :] == messages[cut:]
    assert new[k]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert [is_summary(m) for m in new].count(True) == 1
    assert out["summarized_messages"] == cut - start
    assert out["updated_previous_summary"] == (history.previous_summary is not None)
    assert out["estimate_floor"] == len(new)
    assert_pairs_on_one_side(messages, cut)
    assert_no_orphaned_results(new, messages)


@pytest.mark.parametrize("force", [True, False])
def test_unknown_field_with_a_big_integer_survives(client: TestClient, force: bool) -> None:
    big = 2**64 + 1  # a float cannot hold it exactly
    # Long enough that its summary is smaller than it: a forced compaction is not refused.
    messages = [
        {"role": "user", "content": "hi, here is a long note to fold away. " * 200},
        {"role": "assistant", "content": "hello", "x_meta": {"n": big}},
    ]
    body = {"messages": messages, "force": force, "keep_recent_tokens": 1}
    response = client.post("/compact", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["messages"][-1] == messages[-1]
    assert '"n":18446744073709551617' in response.text.replace(" ", "")
