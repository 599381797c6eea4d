"""What the proxy did with one request, and the answer it gives back (values: the API
renders them as HTTP)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import StrEnum


class AnswerMedia(StrEnum):
    """The media type of an answer the service wrote itself (not the upstream's)."""

    JSON = "json"
    EVENT_STREAM = "event-stream"


@dataclass(frozen=True, slots=True)
class CompactionPreview:
    """What a dry-run request (`X-Compactor-Dry-Run: 1`) would have had done to it,
    had it been sent for real: nothing of it was written or forwarded (SPEC §17)."""

    would_compact: bool
    tokens_before: int | None = None
    tokens_after: int | None = None
    # Messages of the caller's history (stateless) or transcript entries (bound) that
    # the summary would stand for, and where the kept tail would start: the index in the
    # request's history (as `POST /compact`'s `cut_index`) or the session entry's seq
    # (as a compaction record's `first_kept_seq`).
    folded: int = 0
    cut: int | None = None
    # Bound sessions: the first and last transcript entry folded.
    folded_seqs: tuple[int, int] | None = None
    cache_hit: bool = False
    # Why it would not compact (under the threshold, nothing to fold, a failing summarizer).
    reason: str | None = None


@dataclass
class ProxyReport:
    """What happened, for the answer's X-Compactor-* headers and the log."""

    compacted: bool = False
    tokens_before: int | None = None
    tokens_after: int | None = None
    session_id: str | None = None
    cache_hit: bool = False
    overflow_retried: bool = False
    # The request's model and the threshold it was held against, once counted.
    model: str | None = None
    threshold: int | None = None
    # Whether anything (registry, alias, configuration, upstream list) knew the model,
    # and where its window came from; None when the estimation does not say (SPEC §18).
    model_known: bool | None = None
    window_source: str | None = None
    # What the turn that crossed the threshold found prepared ahead (SPEC §16): ready,
    # pending (forwarded uncompacted, the summary still in the making) or waited.
    prepared: str | None = None
    # Why compaction was skipped or failed open, for the log (never the caller's data).
    note: str | None = None
    # A dry run's preview (None: a request sent for real).
    preview: CompactionPreview | None = None


@dataclass
class ProxyAnswer:
    """The answer as it goes back: whole (`body`) or as it arrives (`stream`). `media` is
    set when the service wrote the answer itself (the upstream's headers say it
    otherwise)."""

    status: int
    headers: list[tuple[str, str]]
    report: ProxyReport
    body: bytes = b""
    stream: AsyncIterator[bytes] | None = None
    media: AnswerMedia | None = None
