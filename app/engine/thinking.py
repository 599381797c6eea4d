"""Thinking levels, ordered: off < minimal < low < medium < high."""

from __future__ import annotations

from enum import StrEnum


class ThinkingLevel(StrEnum):
    OFF = "off"
    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return _ORDER.index(self)


_ORDER = list(ThinkingLevel)


def lowest_level(supported: tuple[ThinkingLevel, ...]) -> ThinkingLevel | None:
    """The lowest level a model supports, or None when it declares none."""
    return min(supported, key=lambda level: level.rank) if supported else None


def clamp_level(level: ThinkingLevel, supported: tuple[ThinkingLevel, ...]) -> ThinkingLevel:
    """The highest supported level not above `level` (or the lowest supported one)."""
    if not supported or level in supported:
        return level
    below = [s for s in supported if s.rank <= level.rank]
    if below:
        return max(below, key=lambda s: s.rank)
    lowest = lowest_level(supported)
    return lowest if lowest is not None else level
