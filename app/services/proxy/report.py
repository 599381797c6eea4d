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
    # Why compaction was skipped or failed open, for the log (never the caller's data).
    note: str | None = None


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
