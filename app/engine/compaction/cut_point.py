"""Where the kept tail starts (SPEC §5.2)."""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.messages import Message


def find_cut_index(
    messages: Sequence[Message],
    per_message: Sequence[int],
    keep_recent_tokens: int,
    start: int = 0,
) -> int:
    """Index of the first kept message; a result `<= start` means nothing to compact.

    `start` is the first message that may be summarized (after system messages and a
    previous summary). Walks back from the newest message until `keep_recent_tokens` are
    kept, moves to the nearest older valid cut point, then widens the tail until no tool
    call is separated from its result.
    """
    kept = 0
    candidate = None
    for index in range(len(messages) - 1, start - 1, -1):
        kept += per_message[index]
        if kept >= keep_recent_tokens:
            candidate = index
            break
    if candidate is None:
        return start
    cut = nearest_valid_cut(messages, candidate, start)
    return start if cut is None else keep_tool_pairs_together(messages, cut, start)


def nearest_valid_cut(messages: Sequence[Message], index: int, start: int) -> int | None:
    """The nearest valid cut point at or before `index`, not before `start`."""
    for position in range(index, start - 1, -1):
        if is_cut_point(messages, position, start):
            return position
    return None


def is_cut_point(messages: Sequence[Message], position: int, start: int) -> bool:
    """Whether the kept tail may start at `position`.

    Messages bound to the next one (reasoning items) go wherever the first unbound message
    after them goes: a run of them is a cut point when that message is one, and the
    message right after such a run is not (cutting there would strand the run).
    """
    if position > start and messages[position - 1].binds_to_next:
        return False
    follower = position
    while follower < len(messages) - 1 and messages[follower].binds_to_next:
        follower += 1
    return messages[follower].is_valid_cut_point


def tool_pairs(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """(call index, result index) of every answered tool call.

    A result pairs with the most recent unanswered call of its id, so backends that reuse
    ids across turns (`call_0` every turn) pair turn by turn. Results with no earlier call
    and calls never answered form no pair: they cannot be split.
    """
    unanswered: dict[str, list[int]] = {}
    pairs: list[tuple[int, int]] = []
    for index, message in enumerate(messages):
        for call_id in message.tool_result_ids:
            open_calls = unanswered.get(call_id)
            if open_calls:
                pairs.append((open_calls.pop(), index))
        for call_id in message.tool_call_ids:
            unanswered.setdefault(call_id, []).append(index)
    return pairs


def keep_tool_pairs_together(messages: Sequence[Message], cut: int, start: int) -> int:
    """Moves `cut` back until every call/result pair lies wholly on one side of it.

    Handles parallel calls, results that arrive out of order or several messages late, and
    ids reused across turns.
    """
    pairs = tool_pairs(messages)
    while cut > start:
        earliest_split = min((call for call, result in pairs if call < cut <= result), default=None)
        if earliest_split is None:
            return cut
        moved = nearest_valid_cut(messages, earliest_split, start)
        if moved is None:
            return start
        cut = moved
    return cut
