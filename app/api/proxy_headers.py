"""The service's own headers on proxied requests: read from the caller, written on the
answer (SPEC §10). The one place their names are spelled."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request

from app.api.auth import PROXY_KEY_HEADER
from app.services.proxy.report import AnswerMedia, CompactionPreview, ProxyAnswer, ProxyReport

MODE_HEADER = "x-compactor-mode"
SESSION_HEADER = "x-compactor-session"
DRY_RUN_HEADER = "x-compactor-dry-run"
# The service's own headers (X-Compactor-Key, -Mode, -Session, …) are read here and never
# forwarded: X-Compactor-Key is a secret, and the upstream has no business with the rest.
OWN_PREFIX = "x-compactor-"
assert all(h.lower().startswith(OWN_PREFIX) for h in (PROXY_KEY_HEADER, MODE_HEADER))
_MEDIA_TYPES = {
    AnswerMedia.JSON: [("content-type", "application/json")],
    AnswerMedia.EVENT_STREAM: [
        ("content-type", "text/event-stream"),
        ("cache-control", "no-cache"),
    ],
}


def caller_headers(request: Request) -> list[tuple[str, str]]:
    """Credentials and vendor headers exactly as sent, minus the service's own
    (X-Compactor-*); the transport drops hop-by-hop ones."""
    return [(k, v) for k, v in request.headers.items() if not k.lower().startswith(OWN_PREFIX)]


def session_id_of(request: Request) -> str | None:
    """The X-Compactor-Session the request names, if any."""
    value = request.headers.get(SESSION_HEADER, "").strip()
    return value or None


def report_headers(report: ProxyReport) -> list[tuple[str, str]]:
    """What the proxy did, as the answer's X-Compactor-* headers."""

    def number(value: int | None) -> str:
        return "" if value is None else str(value)

    headers = [
        ("x-compactor-compacted", "true" if report.compacted else "false"),
        ("x-compactor-tokens-before", number(report.tokens_before)),
        ("x-compactor-tokens-after", number(report.tokens_after)),
        ("x-compactor-session", report.session_id or ""),
    ]
    if report.model_known is not None:
        # SPEC §18: a model nobody knew is said, never silently given a guessed window.
        headers.append(("x-compactor-model-known", "true" if report.model_known else "false"))
    if report.window_source is not None:
        headers.append(("x-compactor-context-window-source", report.window_source))
    if report.prepared is not None:
        headers.append(("x-compactor-prepared", report.prepared))
    if report.preview is not None:
        headers.extend(preview_headers(report.preview))
    return headers


def preview_headers(preview: CompactionPreview) -> list[tuple[str, str]]:
    """A dry run's `X-Compactor-Would-*` headers: what compaction would have done (the
    plain X-Compactor-* headers say what was forwarded: uncompacted)."""

    def number(value: int | None) -> str:
        return "" if value is None else str(value)

    headers = [
        (DRY_RUN_HEADER, "true"),
        ("x-compactor-would-compact", "true" if preview.would_compact else "false"),
        ("x-compactor-would-tokens-before", number(preview.tokens_before)),
        ("x-compactor-would-tokens-after", number(preview.tokens_after)),
        ("x-compactor-would-fold", str(preview.folded)),
        ("x-compactor-would-cut", number(preview.cut)),
    ]
    if preview.folded_seqs is not None:
        first, last = preview.folded_seqs
        headers.append(("x-compactor-would-fold-seqs", f"{first}-{last}"))
    if preview.would_compact:
        headers.append(("x-compactor-would-use-cache", "true" if preview.cache_hit else "false"))
    if preview.reason:
        # A header value is Latin-1 on the wire: the reason is ours, but be safe.
        reason = preview.reason.encode("ascii", "replace").decode("ascii")
        headers.append(("x-compactor-would-reason", reason))
    return headers


def answer_headers(answer: ProxyAnswer) -> Sequence[tuple[str, str]]:
    """The answer's headers: the upstream's (or the media type of one the service
    wrote), then the X-Compactor-* report."""
    media = _MEDIA_TYPES[answer.media] if answer.media is not None else []
    return [*answer.headers, *media, *report_headers(answer.report)]
