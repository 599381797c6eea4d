"""The typed registry of wire formats, and format detection.

Detection asks every registered format whether a message proves it (block types, fields
only one format has); a top-level system prompt proves the format that has one. Plain
user/assistant text reads the same in every format and falls back to the default.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from app.engine.errors import InvalidHistoryError
from app.formats import anthropic, gemini, openai, responses
from app.formats.protocol import WireFormat

# Each format is its module (the module satisfies the WireFormat protocol: mypy checks
# these four assignments).
OPENAI_CHAT: WireFormat = openai
ANTHROPIC_MESSAGES: WireFormat = anthropic
RESPONSES: WireFormat = responses
GEMINI: WireFormat = gemini


class FormatRegistry:
    """Wire formats by name, listed in registration order (the HTTP contract's order),
    asked for evidence with the `asked_first` ones first."""

    def __init__(
        self, formats: Iterable[WireFormat], default: str, *, asked_first: Sequence[str] = ()
    ) -> None:
        self._formats: dict[str, WireFormat] = {f.name: f for f in formats}
        if default not in self._formats:
            raise ValueError(f"the default format {default!r} is not registered")
        self.default: WireFormat = self._formats[default]
        first = [self._formats[name] for name in asked_first]
        self._asked = [*first, *(f for f in self._formats.values() if f not in first)]

    @property
    def names(self) -> tuple[str, ...]:
        """Every format's name, in registration order."""
        return tuple(self._formats)

    @property
    def _asked_names(self) -> list[str]:
        return [wire.name for wire in self._asked]

    def __contains__(self, name: object) -> bool:
        return name in self._formats

    def __iter__(self) -> Iterator[WireFormat]:
        """The formats in the order they are asked for evidence."""
        return iter(self._asked)

    def get(self, name: str) -> WireFormat:
        """The format called `name`; an unknown name is the caller's mistake (422)."""
        found = self._formats.get(name)
        if found is None:
            raise InvalidHistoryError(
                f"format: unknown format {name!r}; use one of {', '.join(self._asked_names)}",
                where="format",
            )
        return found

    def evidence(self, messages: Sequence[Any], system: Any = None) -> WireFormat | None:
        """The format the messages prove, or None while they read the same in all."""
        for message in messages:
            for wire in self._asked:
                if wire.proves(message):
                    return wire
        if system is not None:
            for wire in self._asked:
                if wire.top_level_system_is_evidence:
                    return wire
        return None

    def detect(self, messages: Sequence[Any], system: Any = None) -> WireFormat:
        """The format of a request whose caller did not say; the default when undecided."""
        return self.evidence(messages, system) or self.default

    def resolve(self, name: str | None, messages: Sequence[Any], system: Any = None) -> WireFormat:
        """The named format, or the detected one."""
        return self.get(name) if name is not None else self.detect(messages, system)


FORMATS = FormatRegistry(
    [OPENAI_CHAT, ANTHROPIC_MESSAGES, RESPONSES, GEMINI],
    default=OPENAI_CHAT.name,
    # Responses items carry a `type` (and Chat Completions messages never do), so they are
    # asked first: a Responses developer message would otherwise read as a Chat one.
    asked_first=(RESPONSES.name,),
)


def parses_all(wire: WireFormat, messages: Sequence[Any]) -> bool:
    """True when every message is valid in `wire`."""
    try:
        for i, message in enumerate(messages):
            wire.parse_message(message, f"messages[{i}]")
    except InvalidHistoryError:
        return False
    return True
