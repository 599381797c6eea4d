"""One structured log line per compaction, per overflow retry and per prepared-ahead
summary (SPEC §18), so "why did my agent forget X?" has an answer in the logs.

Each line is a `log_event` (JSON, with the request id added by the filter) of the
`compactor.compaction` logger. The fields:

- `event`-specific: `compaction`, `compaction_failed` (the summarizer failed: nothing
  was written, the history went on as it was), `overflow_retry`, `prepared_summary`;
- what was compacted: `session_id` (a stored session), or `api` + `tenant` for the
  proxy's stateless requests, and `summarized_messages` (the prefix folded into the
  summary, which the summary cache keys);
- `tokens_before`, `tokens_after`, `threshold`, `context_window`, `window_source`;
- `strategy` (asked) and `applied` (the steps taken), `trigger`, `model`;
- `summarizer` (`provider/model`), `duration_ms`;
- `cached` (the summary came from the summary cache, no summarizer call) and
  `prepared_ahead` (it was summarized in the background before it was needed) and
  `prepared` (what the turn that crossed the threshold found: `ready`, `pending`,
  `waited`; the X-Compactor-Prepared header);
- `over_threshold`: the history is still over the threshold after it (a session's
  compaction cut deeper once first; its automatic compaction then waits for new entries).

Never message content.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from app.json_logging import log_event
from app.services.estimation import CountedHistory

log = logging.getLogger("compactor.compaction")


def window_source(counted: CountedHistory) -> str:
    """Where the window came from (`request`, `config`, `upstream`, `registry`, `alias`,
    `fallback`)."""
    return counted.context_window_source.value


def decision_fields(counted: CountedHistory) -> dict[str, Any]:
    """The fields that say why the threshold is where it is."""
    return {
        "model": counted.choice.model.name,
        "model_known": counted.model_known,
        "threshold": counted.threshold,
        "context_window": counted.settings.effective_window,
        "window_source": window_source(counted),
    }


def log_compaction(
    counted: CountedHistory,
    *,
    tokens_after: int | None,
    trigger: str,
    strategy: str,
    applied: tuple[str, ...],
    summarizer: str,
    duration_ms: float,
    subject: Mapping[str, Any],
    summarized_messages: int | None = None,
    cached: bool = False,
    prepared_ahead: bool = False,
    prepared: str | None = None,
    over_threshold: bool = False,
) -> None:
    """The line of one compaction that changed the history."""
    log_event(
        log,
        "compaction",
        **subject,
        summarized_messages=summarized_messages,
        trigger=trigger,
        tokens_before=counted.estimate.tokens,
        tokens_after=tokens_after,
        **decision_fields(counted),
        strategy=strategy,
        applied=list(applied),
        summarizer=summarizer,
        duration_ms=round(duration_ms, 2),
        cached=cached,
        prepared_ahead=prepared_ahead,
        prepared=prepared,
        over_threshold=over_threshold,
    )


def log_compaction_failed(
    *, trigger: str, error: str, summarizer: str, duration_ms: float, subject: Mapping[str, Any]
) -> None:
    """The line of a compaction whose summarizer failed (nothing was written)."""
    log_event(
        log,
        "compaction_failed",
        level=logging.WARNING,
        **subject,
        trigger=trigger,
        error=error,
        summarizer=summarizer,
        duration_ms=round(duration_ms, 2),
    )


def log_overflow_retry(
    api: str,
    outcome: str,
    *,
    status: int,
    tokens_before: int | None,
    tokens_after: int | None,
    duration_ms: float,
) -> None:
    """The line of an upstream's context overflow: `retried` (compacted, sent again),
    `nothing_to_compact` or `failed` (the caller gets the upstream's error)."""
    log_event(
        log,
        "overflow_retry",
        api=api,
        outcome=outcome,
        upstream_status=status,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        duration_ms=round(duration_ms, 2),
    )


def log_prepared_summary(
    counted: CountedHistory,
    *,
    subject: Mapping[str, Any],
    tokens_after: int | None,
    summarizer: str,
    duration_ms: float,
    summarized_messages: int | None = None,
) -> None:
    """A summary prepared ahead in the background (SPEC §16), when it is stored, before
    it is used."""
    log_event(
        log,
        "prepared_summary",
        **subject,
        summarized_messages=summarized_messages,
        tokens_before=counted.estimate.tokens,
        tokens_after=tokens_after,
        **decision_fields(counted),
        summarizer=summarizer,
        duration_ms=round(duration_ms, 2),
        prepared_ahead=True,
    )
