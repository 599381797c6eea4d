"""What the fake billed: one `Bill` per request it answered or refused, and totals."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Bill:
    """One request as the vendor would bill it. Token fields are the vendor's own split:
    `uncached` is Anthropic's `input_tokens` / OpenAI's prompt tokens minus cached ones."""

    api: str  # messages | chat | responses
    model: str
    status: int
    uncached: int = 0
    read: int = 0
    write_5m: int = 0
    write_1h: int = 0
    output: int = 0
    dollars: float = 0.0
    breakpoints: int = 0
    # What the request said about caching (cache key, retention), for tests to assert.
    cache_key: str | None = None
    error: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request, whatever its price."""
        return self.uncached + self.read + self.write_5m + self.write_1h

    @property
    def written(self) -> int:
        return self.write_5m + self.write_1h

    @property
    def refused(self) -> bool:
        return self.status >= 400


@dataclass(frozen=True, slots=True)
class Totals:
    """Sums over a run of bills (refused requests count as turns, not tokens)."""

    requests: int
    refused: int
    prompt_tokens: int
    uncached: int
    read: int
    written: int
    output: int
    dollars: float

    @classmethod
    def of(cls, bills: Iterable[Bill]) -> Totals:
        bills = list(bills)
        ok = [b for b in bills if not b.refused]
        return cls(
            requests=len(bills),
            refused=len(bills) - len(ok),
            prompt_tokens=sum(b.prompt_tokens for b in ok),
            uncached=sum(b.uncached for b in ok),
            read=sum(b.read for b in ok),
            written=sum(b.written for b in ok),
            output=sum(b.output for b in ok),
            dollars=sum(b.dollars for b in ok),
        )
