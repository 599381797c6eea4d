"""The one error type of the client, and how answers and transport failures become it."""

from __future__ import annotations

import json
from typing import Any

import httpx

TRANSPORT_ERROR = "urn:context-compactor:client:transport-error"
TIMEOUT_ERROR = "urn:context-compactor:client:timeout"
UNEXPECTED_RESPONSE = "urn:context-compactor:client:unexpected-response"

_DETAIL_CHARS = 500


class CompactorAPIError(Exception):
    """A request to the service failed; the fields are its RFC 9457 problem details.

    `status` is the HTTP status, or 0 when no answer arrived (connection refused, timeout,
    broken connection). `type`, `title` and `detail` come from the problem+json body; for
    a non-JSON answer `title` is the reason phrase and `detail` the start of the text.
    `body` is the decoded JSON object of the answer (`{}` when there was none), so fields
    beyond RFC 9457, such as `errors` on a 422, stay reachable.
    """

    def __init__(
        self,
        status: int,
        title: str,
        detail: str,
        type: str = "about:blank",
        body: dict[str, Any] | None = None,
        *,
        method: str = "",
        url: str = "",
        request_id: str | None = None,
    ) -> None:
        self.status = status
        self.title = title
        self.detail = detail
        self.type = type
        self.body: dict[str, Any] = body if body is not None else {}
        self.method = method
        self.url = url
        self.request_id = request_id
        super().__init__(self._message())

    def _message(self) -> str:
        where = f" ({self.method} {self.url})" if self.method else ""
        status = f"{self.status} " if self.status else ""
        return f"{status}{self.title}: {self.detail}{where}"

    def __repr__(self) -> str:
        return (
            f"CompactorAPIError(status={self.status!r}, title={self.title!r}, "
            f"detail={self.detail!r}, type={self.type!r})"
        )


def error_from_response(response: httpx.Response) -> CompactorAPIError:
    """A non-2xx answer as the error, reading problem+json when the body is JSON."""
    request = response.request
    body: dict[str, Any] = {}
    try:
        decoded = json.loads(response.content) if response.content else None
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        body = decoded
    title = body.get("title")
    detail = body.get("detail")
    problem_type = body.get("type")
    if not isinstance(detail, str):
        # A non-problem answer (a proxy's HTML page, FastAPI's plain {"detail": [...]}):
        # keep a readable start of what came back.
        detail = _snippet(response.text) if detail is None else _snippet(json.dumps(detail))
    return CompactorAPIError(
        status=response.status_code,
        title=title if isinstance(title, str) else response.reason_phrase or "HTTP error",
        detail=detail or "(empty answer)",
        type=problem_type if isinstance(problem_type, str) else "about:blank",
        body=body,
        method=request.method,
        url=str(request.url),
        request_id=response.headers.get("x-request-id"),
    )


def error_from_transport(exc: httpx.RequestError, method: str, url: str) -> CompactorAPIError:
    """No answer arrived: status 0, with the transport failure as the detail."""
    timed_out = isinstance(exc, httpx.TimeoutException)
    return CompactorAPIError(
        status=0,
        title="Timed out" if timed_out else "Connection failed",
        detail=str(exc) or type(exc).__name__,
        type=TIMEOUT_ERROR if timed_out else TRANSPORT_ERROR,
        method=method,
        url=url,
    )


def unexpected_response(response: httpx.Response, problem: str) -> CompactorAPIError:
    """A 2xx answer whose body is not what the API contract promises."""
    return CompactorAPIError(
        status=response.status_code,
        title="Unexpected response",
        detail=f"{problem}; the server may be a different version than this client",
        type=UNEXPECTED_RESPONSE,
        method=response.request.method,
        url=str(response.request.url),
        request_id=response.headers.get("x-request-id"),
    )


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "…"
