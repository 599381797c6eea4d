"""What each transcript entry is found by: written beside the entry at append (and by the
search migration for entries stored before it), indexed by the store."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from app.engine.errors import InvalidHistoryError
from app.engine.messages import Message
from app.engine.search import indexed_text, raw_text, tool_call_names
from app.formats.protocol import WireFormat

# Entries read back, at most, to name the tool a result answers when its call came in an
# earlier append (almost always the entry just before).
LOOK_BACK_ENTRIES = 50


def parse_or_none(parser: WireFormat, message: Any) -> Message | None:
    try:
        return parser.parse_message(message, "message")
    except InvalidHistoryError:
        return None


class EntryIndexer:
    """Indexed texts of a session's entries in order, remembering the tool names of the
    calls seen so far (a result names its tool only by the call's id)."""

    def __init__(self, parser: WireFormat) -> None:
        self.parser = parser
        self.tool_names: dict[str, str] = {}

    def learn(self, messages: Iterable[Any]) -> None:
        """Remembers the tool calls of earlier entries."""
        for message in messages:
            parsed = parse_or_none(self.parser, message)
            if parsed is not None:
                self.tool_names.update(tool_call_names(parsed))

    def texts(self, messages: Sequence[Any], parsed: Sequence[Message | None]) -> list[str]:
        """The indexed text of each of `messages` (`parsed`: the same, parsed, or None)."""
        return [
            indexed_text(p, self.tool_names) if p is not None else raw_text(m)
            for m, p in zip(messages, parsed, strict=True)
        ]


def batch_texts(
    parser: WireFormat,
    messages: Sequence[Any],
    parsed: Sequence[Message],
    earlier: Callable[[], Sequence[Any]],
) -> list[str]:
    """The indexed texts of an appended batch; `earlier` reads the entries before it,
    only when a result in the batch answers a call the batch does not hold."""
    indexer = EntryIndexer(parser)
    in_batch = {call for p in parsed for call in tool_call_names(p)}
    answered = {call for p in parsed for call in p.tool_result_ids}
    if answered - in_batch:
        indexer.learn(earlier())
    return indexer.texts(messages, parsed)
