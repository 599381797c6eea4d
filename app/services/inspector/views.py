"""What the inspector page shows, as frozen values (no store rows, no web types)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from app.engine.clearing import ClearedToolUse
from app.services.cost_ledger import SessionCost
from app.services.inspector.curve import TokenCurve
from app.services.inspector.summary_diff import SummaryDiff
from app.services.inspector.transcript_view import EntryView


@dataclass(frozen=True, slots=True)
class SessionItem:
    """One row of the sessions list."""

    id: str
    model: str | None
    format: str | None
    entries: int
    compactions: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Page:
    number: int  # 1-based
    size: int
    total: int

    @property
    def count(self) -> int:
        return max(1, math.ceil(self.total / self.size))

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.size

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.count


@dataclass(frozen=True, slots=True)
class SessionList:
    items: tuple[SessionItem, ...]
    page: Page


@dataclass(frozen=True, slots=True)
class CompactionView:
    """One compaction as the page shows it."""

    id: str
    ordinal: int
    trigger: str
    strategy: str
    applied: tuple[str, ...]
    summarizer: str
    created_at: datetime
    tokens_before: int
    tokens_after: int
    # The entries this compaction folded into the summary for the first time: [start, end).
    folded_start: int
    folded_end: int
    first_kept_seq: int
    covered_seq: int
    summary: str
    diff: SummaryDiff
    restored_facts: tuple[tuple[str, str], ...]
    cleared: tuple[ClearedToolUse, ...]
    instructions: str | None
    current_request: str | None

    @property
    def folded_count(self) -> int:
        return max(0, self.folded_end - self.folded_start)


@dataclass(frozen=True, slots=True)
class SessionInspection:
    """Everything the page of one session shows."""

    session: SessionItem
    context_tokens: int
    curve: TokenCurve
    compactions: tuple[CompactionView, ...]
    entries: tuple[EntryView, ...]
    page: Page
    # What the session cost by the upstream's usage reports (SPEC §15).
    cost: SessionCost | None = None
