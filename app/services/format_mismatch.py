"""Saying "wrong format" when that is what is wrong, not the first field that failed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.engine.errors import InvalidHistoryError
from app.formats.protocol import WireFormat
from app.formats.registry import FORMATS, parses_all


def look_alike(expected: WireFormat, messages: Sequence[Any]) -> WireFormat | None:
    """Another format these messages read as (by their evidence, else by being valid in
    it), or None when they are simply invalid."""
    proven = FORMATS.evidence(messages)
    if proven is not None:
        return proven if proven.name != expected.name else None
    for wire in FORMATS:
        if wire.name != expected.name and parses_all(wire, messages):
            return wire
    return None


def mismatch_error(
    exc: InvalidHistoryError, expected: WireFormat, messages: Sequence[Any], claim: str
) -> InvalidHistoryError:
    """`exc` restated as a format mismatch when the messages look like another format;
    `claim` says where the expected format came from ("this session is in anthropic
    format")."""
    other = look_alike(expected, messages)
    if other is None:
        return exc
    return InvalidHistoryError(
        f"{claim}; these messages look like {other.name}: {exc}",
        where=exc.where,
    )
