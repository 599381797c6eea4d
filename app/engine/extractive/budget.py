"""Token budgets per summary section, and which items go first when a section is full.

Budgets are in tokens (estimated from characters: the engine has no tokenizer here, and
code and paths run about 3.5 characters a token). When a section is over its budget the
least informative items go first — no value, few words, oldest — so a rule the user
planted early is never pushed out by later filler; the user's constraints are the last
section to give anything up.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.engine.extractive.statements import content_words, values_in

CHARS_PER_TOKEN = 3.5


@dataclass(frozen=True, slots=True)
class SectionBudgets:
    """Token budgets of the summary's sections, and of the whole summary."""

    goal: int = 550
    constraints: int = 800
    facts: int = 300
    done: int = 300
    in_progress: int = 120
    blocked: int = 80
    decisions: int = 160
    next_steps: int = 220
    files: int = 900
    errors: int = 260
    context: int = 200
    total: int = 3_000


DEFAULT_BUDGETS = SectionBudgets()


def tokens(text: str) -> int:
    """Estimated tokens of `text`."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) + 1


def informativeness(item: str) -> float:
    """How much an item tells: its values count most, then its words."""
    return 3 * min(len(values_in(item)), 4) + min(len(content_words(item)), 12) / 3


def fit(
    items: Sequence[str],
    budget: int,
    *,
    score: Callable[[str], float] = informativeness,
    keep: Callable[[int], bool] = lambda index: False,
) -> tuple[str, ...]:
    """`items` (order kept) within `budget` tokens: the lowest-scoring go first, the oldest
    of equal score before newer ones; `keep(index)` marks items that never go."""
    used = sum(tokens(i) for i in items)
    if used <= budget:
        return tuple(items)
    order = sorted(
        (i for i in range(len(items)) if not keep(i)), key=lambda i: (score(items[i]), i)
    )
    dropped: set[int] = set()
    for index in order:
        if used <= budget:
            break
        dropped.add(index)
        used -= tokens(items[index])
    return tuple(item for index, item in enumerate(items) if index not in dropped)


def fit_newest(items: Sequence[str], budget: int) -> tuple[str, ...]:
    """The newest `items` that fit `budget` tokens, order kept (for lists of equal worth)."""
    kept: list[str] = []
    used = 0
    for item in reversed(items):
        cost = tokens(item)
        if used + cost > budget:
            break
        kept.append(item)
        used += cost
    return tuple(reversed(kept))


def fit_leading(items: Sequence[str], budget: int) -> tuple[str, ...]:
    """The leading `items` that fit `budget` tokens (for lists kept most recent first)."""
    kept: list[str] = []
    used = 0
    for item in items:
        cost = tokens(item)
        if used + cost > budget:
            break
        kept.append(item)
        used += cost
    return tuple(kept)


def cap_tokens(text: str, budget: int) -> str:
    """`text` cut to about `budget` tokens, saying how much was left out."""
    limit = int(budget * CHARS_PER_TOKEN)
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()} … [{len(text) - limit} more characters not shown]"
