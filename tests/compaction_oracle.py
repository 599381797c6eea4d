"""An independent oracle of SPEC §5.2 over wire messages (OpenAI and Anthropic shapes),
written without the app's parsers, for the property tests."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX


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
