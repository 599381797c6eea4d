"""The service's own headers on proxied requests: read from the caller, written on the
answer (SPEC §10). The one place their names are spelled."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request

from app.api.auth import PROXY_KEY_HEADER
from app.services.proxy.report import AnswerMedia, ProxyAnswer, ProxyReport

MODE_HEADER = "x-compactor-mode"
SESSION_HEADER = "x-compactor-session"
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
    return headers


def answer_headers(answer: ProxyAnswer) -> Sequence[tuple[str, str]]:
    """The answer's headers: the upstream's (or the media type of one the service
    wrote), then the X-Compactor-* report."""
    media = _MEDIA_TYPES[answer.media] if answer.media is not None else []
    return [*answer.headers, *media, *report_headers(answer.report)]
