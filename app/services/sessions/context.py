"""Building a session's current context from its transcript and latest compaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.engine.compaction.marker import SummaryMarker
from app.engine.counting.estimate import UsageReport
from app.formats.registry import FORMATS, parses_all
from app.services.history import HistoryInput
from app.store.views import CompactionRecord, SessionView, TranscriptEntry


@dataclass(frozen=True, slots=True)
class ForwardedPrompt:
    """The system prompt and tools a proxied request forwards next to the session's
    context: counted in place of the session's own (None: the session's own)."""

    system: Any = None
    tools: Sequence[Any] | None = None
    # The request's output budget (max tokens; 0: it names none): it raises the
    # session's reserve, and decides "does the uncompacted context still fit the window".
    output_budget: int = 0


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What the agent should send now, and where each message came from."""

    session: SessionView
    format: str
    messages: list[Any]
    # Transcript sequence number of each message; None marks the summary message.
    seqs: list[int | None]
    usage: list[UsageReport]
    estimate_floor: int
    latest: CompactionRecord | None
    # What a proxied request forwards instead of the session's system prompt and tools.
    prompt: ForwardedPrompt | None = None

    def history(self) -> HistoryInput:
        prompt = self.prompt or ForwardedPrompt()
        system = prompt.system if prompt.system is not None else self.session.system
        tools = prompt.tools if prompt.tools is not None else self.session.tools
        return replace(
            session_history(self.session, self.format, self.messages),
            system=system,
            tools=tools or (),
            usage=self.usage,
            estimate_floor=self.estimate_floor,
            # A bound request's output budget raises the session's reserve, as it does a
            # stateless caller's: the forwarded context leaves room for that much output.
            output_budget=prompt.output_budget,
        )


def session_history(
    session: SessionView, format_name: str | None, messages: Sequence[Any]
) -> HistoryInput:
    """`messages` as a history of `session`: counted with its system prompt, tools and
    model, against the thresholds of its settings."""
    settings = session.settings
    return HistoryInput(
        messages=messages,
        format=format_name,
        system=session.system,
        tools=session.tools or (),
        model=session.model,
        context_window=settings.context_window,
        reserve_tokens=settings.reserve_tokens,
        trigger_tokens=settings.trigger_tokens,
        keep_recent_tokens=settings.keep_recent_tokens,
    )


def session_format(stored: str | None, messages: Sequence[Any]) -> str | None:
    """The session's format, or the one this batch decides; None while it reads the same
    in both.

    A batch decides by its block types, or by being valid in only one format (an assistant
    message without content is OpenAI). While undecided, every stored message is valid in
    both, so whichever format is decided later can still read all of them.
    """
    if stored:
        return stored
    # A session's `system` is a setting in both formats, not evidence of one.
    proven = FORMATS.evidence(messages)
    if proven is not None:
        return proven.name
    readable = [wire.name for wire in FORMATS if parses_all(wire, messages)]
    if len(readable) == 1:
        return readable[0]
    # Valid in several: undecided. Valid in none: the default, whose parser names the problem.
    return None if readable else FORMATS.default.name


def build_context(
    session: SessionView,
    latest: CompactionRecord | None,
    system_prefix: Sequence[TranscriptEntry],
    kept: Sequence[TranscriptEntry],
    marker: SummaryMarker,
) -> SessionContext:
    """[leading system entries] + [latest summary] + entries from its first kept one,
    without the prompt-cache breakpoints the messages were sent with.

    Usage reports on entries the latest compaction already saw are stale: the estimate
    floor starts at the first entry appended after it.
    """
    wire = FORMATS.get(session.format) if session.format else FORMATS.default
    fmt = wire.name
    messages: list[Any] = []
    seqs: list[int | None] = []
    prefix_seqs = {e.seq for e in system_prefix}
    for entry in system_prefix:
        messages.append(entry.message)
        seqs.append(entry.seq)
    # A record that only cleared tool results, on a session never summarized, has none.
    if latest is not None and latest.summary:
        recall = session.id if marker.recall_hint else None
        messages.append(wire.summary_message(marker.render(latest.summary, recall)))
        seqs.append(None)
    usage: list[UsageReport] = []
    covered = latest.covered_seq if latest is not None else 0
    # With no compaction yet every report is current.
    floor: int | None = 0 if latest is None else None
    for entry in kept:
        if entry.seq in prefix_seqs:
            continue
        index = len(messages)
        if floor is None and entry.seq >= covered:
            floor = index
        messages.append(entry.message)
        seqs.append(entry.seq)
        if entry.usage:
            usage.append(UsageReport(message_index=index, **entry.usage))
    if latest is not None and latest.cleared_tool_uses:
        # Placeholders go into copies: the transcript keeps the originals.
        messages = wire.apply_cleared(messages, latest.cleared_tool_uses)
    # A stored message's cache breakpoint belonged to the request it came in: left in,
    # every turn would add one more (SPEC §15). The transcript keeps the originals.
    messages = wire.without_cache_breakpoints(messages)
    return SessionContext(
        session=session,
        format=fmt,
        messages=messages,
        seqs=seqs,
        usage=usage,
        estimate_floor=floor if floor is not None else len(messages),
        latest=latest,
    )


def compacted_context(
    context: SessionContext,
    record: CompactionRecord,
    messages: list[Any],
    seqs: list[int | None],
) -> SessionContext:
    """The context once `record` (a compaction of `context` into `messages`, whose
    transcript entries are `seqs`) is written: what `build_context` would rebuild from
    the store, without reading it again. Every usage report is stale now (the record
    covers every entry), so the estimate floor is past the last message."""
    assert len(messages) == len(seqs)
    position = {seq: index for index, seq in enumerate(seqs) if seq is not None}
    usage = [
        replace(report, message_index=position[seq])
        for report in context.usage
        if (seq := context.seqs[report.message_index]) is not None and seq in position
    ]
    return replace(
        context,
        session=replace(context.session, compaction_count=record.ordinal),
        messages=messages,
        seqs=seqs,
        usage=usage,
        estimate_floor=len(messages),
        latest=record,
    )


def context_before(context: SessionContext, end_seq: int) -> SessionContext:
    """`context` without the entries from `end_seq` on (what a retried turn saw: the
    turn's own messages last, not the reply or anything recorded after it)."""
    keep = [i for i, seq in enumerate(context.seqs) if seq is None or seq < end_seq]
    if len(keep) == len(context.seqs):
        return context
    position = {old: new for new, old in enumerate(keep)}
    usage = [
        replace(report, message_index=position[report.message_index])
        for report in context.usage
        if report.message_index in position
    ]
    floor = sum(1 for i in keep if i < context.estimate_floor)
    return replace(
        context,
        messages=[context.messages[i] for i in keep],
        seqs=[context.seqs[i] for i in keep],
        usage=usage,
        estimate_floor=floor,
    )


def with_pending(context: SessionContext, messages: Sequence[Any]) -> SessionContext:
    """`context` with `messages` after it as the next entries would be, numbered as they
    would be: a dry run's turn, counted and previewed, never stored."""
    if not messages:
        return context
    wire = FORMATS.get(context.format)
    start = context.session.entry_count
    added = wire.without_cache_breakpoints(list(messages))
    return replace(
        context,
        session=replace(context.session, entry_count=start + len(added)),
        messages=[*context.messages, *added],
        seqs=[*context.seqs, *range(start, start + len(added))],
    )
