"""What a caller added to a conversation since the model last spoke (a proxied request
bound to a session carries its whole history; only the new messages are recorded)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.engine.errors import InvalidHistoryError
from app.engine.messages import Role
from app.formats.registry import FORMATS


def new_messages(format_name: str, history: Sequence[Any]) -> list[Any]:
    """The messages after the last one the assistant wrote (the proxy recorded that reply
    itself from the upstream)."""
    wire = FORMATS.get(format_name)
    for index in range(len(history) - 1, -1, -1):
        try:
            role = wire.parse_message(history[index], f"messages[{index}]").role
        except InvalidHistoryError:
            continue
        if role is Role.ASSISTANT:
            return list(history[index + 1 :])
    return list(history)


def unrecorded(fresh: list[Any], recorded_tail: list[Any]) -> list[Any]:
    """`fresh` less what the session already recorded after the model last spoke.

    A request whose upstream failed left its new messages in the transcript with no
    reply; the caller's retry sends them again, and they must not be recorded twice.
    """
    count = len(recorded_tail)
    if count and fresh[:count] == recorded_tail:
        return fresh[count:]
    return fresh
