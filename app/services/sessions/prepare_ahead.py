"""A session's compaction prepared ahead (SPEC §16), the session-mode half of what
`services.proxy.prepare_ahead` does for stateless callers.

Past the soft threshold (`prepare_ahead_ratio` of the threshold: the session's own
setting, else its model's policy, else the service's; a session's `off`: never), once
the threshold is a summary's time plus one turn away (`services.ahead_pace`; at once
before the session's first prepared compaction), the compaction the session will need
is run in the background — summarizer call included — and kept, not recorded. The turn
that crosses the threshold records it at once, without a summarizer call, if it was
built on the session's latest compaction and its settings and still brings the context
under the threshold (the history only grew past the cut it chose).
Not ready yet: a context that still fits the model's window goes on uncompacted
(`pending`) and a later turn uses the summary; one that does not waits for it, bounded
(`waited`), then compacts inline. A crossing turn whose start the pace held back (the
threshold came sooner than expected) starts it then and goes on the same way.

Prepared compactions live in this process (one per session, the newest): another
replica that takes the session's turn compacts inline, as without prepare-ahead. The
background work itself is the lifespan's (`BackgroundSummaries`): cancelled at shutdown,
and a cancelled one keeps nothing.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from app.engine.compaction import ahead as ahead_cut
from app.engine.compaction.ahead import turn_sizes
from app.services.ahead_pace import AheadPace
from app.services.compaction import CompactionOutcome
from app.services.estimation import CountedHistory
from app.services.prepared_observer import NullPrepareObserver, PrepareObserver
from app.services.sessions.context import SessionContext
from app.store.views import SessionSettings

# Sessions whose prepared compaction is remembered, per process.
_REMEMBERED = 1024


def kept_ahead(keep: int, counted: CountedHistory) -> int:
    """The verbatim tail of a compaction prepared now, to be used by the turn that
    crosses the threshold: `keep` less the growth until then — the distance left to the
    threshold and how far the recent turns say the crossing one goes past it
    (app.engine.compaction.ahead). The proxy's stateless prepare-ahead applies the same
    rule to the caller's history."""
    conversation = counted.conversation
    # Unparsed (a count from the cache alone), the turns are unknown: no overshoot.
    sizes = turn_sizes(conversation.messages, counted.per_message) if conversation else []
    return ahead_cut.kept_ahead(
        keep, counted.estimate.tokens, counted.threshold, ahead_cut.expected_overshoot(sizes)
    )


class BackgroundWork(Protocol):
    """Background work by key, one at a time per key (the lifespan's task group)."""

    def running(self, key: Any) -> bool: ...

    def start(self, key: Any, work: Callable[[], Awaitable[bool]]) -> bool: ...

    async def wait(self, key: Any, seconds: float) -> bool: ...


@dataclass(frozen=True, slots=True)
class PreparedCompaction:
    """A compaction of `context` made ahead of the threshold, not recorded yet."""

    # The ordinal of the record it builds on (0: the session had none).
    base: int
    settings: SessionSettings
    context: SessionContext
    outcome: CompactionOutcome


@dataclass(eq=False)
class SessionPrepareAhead:
    """Starts, keeps and hands out the compactions prepared ahead for sessions."""

    ratio: float
    wait_seconds: float
    background: BackgroundWork
    observer: PrepareObserver = field(default_factory=NullPrepareObserver)
    # When, past the soft threshold, a compaction is started (services.ahead_pace).
    pace: AheadPace = field(default_factory=AheadPace)
    # Sessions (by base record) whose start the pace held back past the soft
    # threshold: their crossing turn starts it and goes on uncompacted, as one whose
    # compaction is still running does, instead of compacting inline.
    _held_back: OrderedDict[tuple[str, str, int], None] = field(
        default_factory=OrderedDict, init=False
    )
    _prepared: OrderedDict[tuple[str, str], PreparedCompaction] = field(
        default_factory=OrderedDict, init=False
    )

    @staticmethod
    def key(context: SessionContext) -> tuple[str, str]:
        return context.session.tenant, context.session.id

    @staticmethod
    def work_key(context: SessionContext) -> tuple[str, str, int]:
        """The background work's key: a failed one is retried once per base record."""
        latest = context.latest
        return context.session.tenant, context.session.id, latest.ordinal if latest else 0

    def ratio_for(self, context: SessionContext, counted: CountedHistory) -> float | None:
        """The session's own ratio (None: `off` for it), else its model's policy in
        COMPACTOR_CONFIG, else the service's."""
        own = context.session.settings.prepare_ahead_ratio
        if own == "off":
            return None
        return own or counted.choice.model.policy.prepare_ahead_ratio or self.ratio

    def soft_threshold(self, context: SessionContext, counted: CountedHistory) -> int | None:
        """Past this many tokens the session's next compaction is prepared (None: never,
        the session turned it off)."""
        ratio = self.ratio_for(context, counted)
        return math.floor(ratio * counted.threshold) if ratio is not None else None

    def due(self, context: SessionContext, counted: CountedHistory) -> bool:
        """True when a compaction should be prepared now: past the soft threshold and
        the threshold expected before a summary started later would be ready
        (`AheadPace`), none running for the session, none kept for its latest record and
        settings. Every call is one of the session's turns for the pace."""
        tokens = counted.estimate.tokens
        self.pace.observe(self.key(context), tokens)
        soft = self.soft_threshold(context, counted)
        if soft is None or tokens <= soft:
            return False
        if self.background.running(self.work_key(context)):
            return False
        kept = self._prepared.get(self.key(context))
        if kept is not None and self._matches(kept, context):
            return False
        if self.pace.in_time(self.key(context), counted.threshold - tokens):
            self._held_back.pop(self.work_key(context), None)
            return True
        self._held_back[self.work_key(context)] = None
        while len(self._held_back) > _REMEMBERED:
            self._held_back.popitem(last=False)
        return False

    def held_back(self, context: SessionContext) -> bool:
        """True when the pace held back the start of this session's compaction (on its
        latest record) past the soft threshold."""
        return self.work_key(context) in self._held_back

    def start(self, context: SessionContext, work: Callable[[], Awaitable[bool]]) -> bool:
        started = self.background.start(self.work_key(context), work)
        if started:
            self.observer.prepared_summary("started")
        return started

    def keep(self, prepared: PreparedCompaction, seconds: float) -> None:
        """Keeps `prepared` (made in `seconds`) as the session's; one kept before and
        never used is wasted."""
        key = self.key(prepared.context)
        self.pace.summary_took(key, seconds)
        if key in self._prepared:
            self.observer.prepared_wasted()
        self._prepared[key] = prepared
        self._prepared.move_to_end(key)
        while len(self._prepared) > _REMEMBERED:
            self._prepared.popitem(last=False)
        self.observer.prepared_summary("stored")

    def running(self, context: SessionContext) -> bool:
        return self.background.running(self.work_key(context))

    async def wait(self, context: SessionContext) -> None:
        """Until the session's background compaction ends, `wait_seconds` at most."""
        await self.background.wait(self.work_key(context), self.wait_seconds)

    def take(self, context: SessionContext) -> PreparedCompaction | None:
        """The kept compaction that still applies to `context` (it is given out once);
        one that no longer applies is dropped and counted as wasted."""
        key = self.key(context)
        kept = self._prepared.pop(key, None)
        if kept is None:
            return None
        if not self._matches(kept, context):
            self.observer.prepared_wasted()
            return None
        return kept

    def give_back(self, prepared: PreparedCompaction) -> None:
        """`prepared` was not used after all (it did not bring the context under the
        threshold): counted as wasted, not kept."""
        self.observer.prepared_wasted()

    @staticmethod
    def _matches(prepared: PreparedCompaction, context: SessionContext) -> bool:
        latest = context.latest
        base = latest.ordinal if latest is not None else 0
        # The ratio only says when to prepare: a compaction prepared before it changed is
        # the same compaction.
        if prepared.base != base or _folding(prepared.settings) != _folding(
            context.session.settings
        ):
            return False
        # The summary was written for this model, system prompt and tools (a proxied
        # request forwards its own): another prompt is another compaction.
        before, now = prepared.context.history(), context.history()
        return (before.model, before.system, before.tools) == (now.model, now.system, now.tools)


def _folding(settings: SessionSettings) -> SessionSettings:
    """The settings that decide what a compaction folds and keeps."""
    return replace(settings, prepare_ahead_ratio=None)
