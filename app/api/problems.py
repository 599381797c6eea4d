"""RFC 9457 problem details: the one place domain errors become HTTP statuses."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from app.engine.errors import (
    CallerGoneError,
    CompactionRequestError,
    CompactionStateError,
    CompactorError,
    EmptySummaryError,
    IneffectiveCompactionError,
    InvalidContextManagementError,
    InvalidHistoryError,
    NothingToCompactError,
    SummarizerError,
    SummarizerRejectedError,
    SummarizerTimeoutError,
    SummarizerUnavailableError,
    SummaryTruncatedError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamUnavailableError,
)
from app.engine.system_prompt import InvalidSystemPromptError
from app.formats.apis.registry import vendor_error_body
from app.services.proxy.service import UpstreamNotConfiguredError
from app.services.sessions.bundles import InvalidBundleError
from app.services.sessions.errors import (
    CompactionConflictError,
    IdempotencyMismatchError,
    JobAbandonedError,
    JobNotFoundError,
    JobsStoppedError,
    RejectedValueError,
    SchemaNotAtHeadError,
    SessionNotFoundError,
    StoreUnavailableError,
)
from app.services.sessions.revisions import CompactionNotFoundError, InvalidForkPointError
from app.services.sessions.search import InvalidSearchQueryError
from app.services.workspace import WorkspaceAccessError

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger(__name__)


class Problem(BaseModel):
    """An error answer (RFC 9457)."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: list[dict[str, Any]] | None = None


class ApiError(Exception):
    """An error raised by the API layer itself with its status and slug."""

    def __init__(self, status: int, title: str, detail: str, slug: str) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail
        self.slug = slug


def problem_response(
    status: int,
    title: str,
    detail: str,
    slug: str,
    errors: list[dict[str, Any]] | None = None,
    *,
    vendor: bool = False,
) -> Response:
    """A problem+json answer; `vendor` adds the `error` member the vendors' SDKs read
    their exception message from (on the /v1 routes)."""
    body: dict[str, Any] = {
        "type": f"https://context-compactor.dev/problems/{slug}",
        "title": title,
        "status": status,
        "detail": detail,
    }
    if errors is not None:
        body["errors"] = errors
    if vendor:
        body["error"] = {"type": _vendor_error_type(status), "message": detail}
    return Response(orjson.dumps(body), status_code=status, media_type=PROBLEM_JSON)


def _vendor_error_type(status: int) -> str:
    """The error `type` both vendors use for a status."""
    named = {401: "authentication_error", 403: "permission_error", 404: "not_found_error"}
    if status in named:
        return named[status]
    return "invalid_request_error" if status < 500 else "api_error"


def vendor_coded_error(status: int, message: str, code: str | None) -> Response:
    """An error in the vendor's own shape (Anthropic's `{"type": "error", "error": {type,
    message, details: {error_code}}}`), for errors the vendor names by a code: its SDK
    raises the matching exception class (CompactionBlockMisplacedError, …)."""
    error: dict[str, Any] = {"type": _vendor_error_type(status), "message": message}
    if code is not None:
        error["details"] = {"error_code": code}
    return Response(
        orjson.dumps({"type": "error", "error": error}),
        status_code=status,
        media_type="application/json",
    )


def on_vendor_route(request: Request) -> bool:
    """True for the vendor-shaped /v1 routes, whose callers are the vendors' SDKs."""
    return request.url.path.startswith("/v1/")


def upstream_not_configured(exc: UpstreamNotConfiguredError) -> Response:
    """The answer of a proxy route whose upstream has no URL: in the vendor's own error
    shape (its SDK raises it as a BadRequestError naming the variable) and marked not to
    be retried (`x-should-retry: false`, which both vendors' SDKs obey)."""
    problem = PROBLEM_TYPES[UpstreamNotConfiguredError]
    body = vendor_error_body(
        exc.upstream, "invalid_request_error", str(exc), code="upstream_not_configured"
    )
    return Response(
        orjson.dumps(body),
        status_code=problem.status,
        media_type="application/json",
        headers={"x-should-retry": "false"},
    )


@dataclass(frozen=True, slots=True)
class ProblemType:
    """How one error class is answered: status, title, and the slug of its `type` URI."""

    status: int
    title: str
    slug: str


_SUMMARIZER_FAILED = ProblemType(502, "Summarizer failed", "summarizer-failed")

# Every request-time domain error class → its problem type. Keyed by class, not ordered:
# the lookup walks the raised class's MRO, so a subclass never hides behind a base by
# accident, and a test requires every CompactorError subclass to be listed explicitly.
PROBLEM_TYPES: Mapping[type[CompactorError], ProblemType] = {
    InvalidHistoryError: ProblemType(422, "Invalid history", "invalid-history"),
    InvalidContextManagementError: ProblemType(
        400, "Invalid context management", "invalid-context-management"
    ),
    CompactionStateError: ProblemType(400, "Compaction state refused", "compaction-state-refused"),
    CompactionRequestError: ProblemType(400, "Compaction refused", "compaction-refused"),
    InvalidSystemPromptError: ProblemType(
        422, "Invalid system prompt request", "invalid-system-prompt"
    ),
    IdempotencyMismatchError: ProblemType(422, "Idempotency key reused", "idempotency-key-reused"),
    WorkspaceAccessError: ProblemType(403, "Outside the workspace", "workspace-access-denied"),
    SessionNotFoundError: ProblemType(404, "Session not found", "session-not-found"),
    InvalidSearchQueryError: ProblemType(400, "Invalid search query", "invalid-search-query"),
    CompactionNotFoundError: ProblemType(404, "Compaction not found", "compaction-not-found"),
    InvalidForkPointError: ProblemType(422, "Invalid fork point", "invalid-fork-point"),
    InvalidBundleError: ProblemType(422, "Invalid session bundle", "invalid-bundle"),
    NothingToCompactError: ProblemType(409, "Nothing to compact", "nothing-to-compact"),
    IneffectiveCompactionError: ProblemType(
        409, "Compaction would not shrink the history", "compaction-ineffective"
    ),
    CompactionConflictError: ProblemType(409, "Compaction conflict", "compaction-conflict"),
    JobNotFoundError: ProblemType(404, "Compaction job not found", "job-not-found"),
    JobAbandonedError: ProblemType(503, "Compaction abandoned", "job-abandoned"),
    JobsStoppedError: ProblemType(503, "Shutting down", "jobs-stopped"),
    RejectedValueError: ProblemType(422, "Value refused by the store", "value-refused"),
    SchemaNotAtHeadError: ProblemType(503, "Database schema out of date", "schema-not-at-head"),
    StoreUnavailableError: ProblemType(503, "Session store unavailable", "store-unavailable"),
    SummarizerError: _SUMMARIZER_FAILED,
    SummaryTruncatedError: _SUMMARIZER_FAILED,
    EmptySummaryError: _SUMMARIZER_FAILED,
    SummarizerRejectedError: ProblemType(
        502, "Summarizer rejected the request", "summarizer-rejected"
    ),
    SummarizerUnavailableError: ProblemType(
        503, "Summarizer unavailable", "summarizer-unavailable"
    ),
    SummarizerTimeoutError: ProblemType(504, "Summarizer timed out", "summarizer-timeout"),
    CallerGoneError: ProblemType(499, "Client closed request", "client-closed"),
    # 400, not 503: the SDKs retry 5xx (twice, by default) before the caller sees why.
    UpstreamNotConfiguredError: ProblemType(
        400, "Upstream not configured", "upstream-not-configured"
    ),
    UpstreamError: ProblemType(502, "Upstream unavailable", "upstream-unavailable"),
    UpstreamUnavailableError: ProblemType(502, "Upstream unavailable", "upstream-unavailable"),
    UpstreamTimeoutError: ProblemType(504, "Upstream timed out", "upstream-timeout"),
}

# An error class nobody mapped is a bug of ours, never the caller's mistake.
INTERNAL_ERROR = ProblemType(500, "Internal server error", "internal-error")


def problem_type_for(exc: BaseException) -> ProblemType:
    """The problem type of the nearest mapped class of `exc`; 500 when none is."""
    for kind in type(exc).__mro__:
        found = PROBLEM_TYPES.get(kind)
        if found is not None:
            return found
    return INTERNAL_ERROR


def documented(*errors: type[CompactorError]) -> dict[int | str, dict[str, Any]]:
    """The `responses` of a route that may raise `errors`: their statuses, derived from
    PROBLEM_TYPES (the statuses every route shares are added by `app.api.openapi`)."""
    statuses: dict[int, list[str]] = {}
    for error in errors:
        kinds = [error, *(k for k in PROBLEM_TYPES if issubclass(k, error) and k is not error)]
        for kind in kinds:
            problem = PROBLEM_TYPES[kind]
            titles = statuses.setdefault(problem.status, [])
            if problem.title not in titles:
                titles.append(problem.title)
    return {
        status: {"model": Problem, "description": "; ".join(titles)}
        for status, titles in sorted(statuses.items())
    }


def _describe_validation(errors: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    items = []
    for error in errors:
        location = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
        items.append({"field": location or "body", "message": error.get("msg", "invalid")})
    detail = "; ".join(f"{i['field']}: {i['message']}" for i in items[:5])
    if len(items) > 5:
        detail += f"; and {len(items) - 5} more"
    return detail or "the request body does not match the schema", items


def install_problem_handlers(app: FastAPI) -> None:
    """Every error leaves as problem+json."""

    async def on_domain(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, CompactorError)
        if isinstance(exc, UpstreamNotConfiguredError):
            return upstream_not_configured(exc)
        problem = problem_type_for(exc)
        if problem is INTERNAL_ERROR:
            log.error("unmapped domain error %s", type(exc).__name__, exc_info=exc)
            detail = f"an unexpected {type(exc).__name__} occurred; the request changed nothing"
        elif isinstance(exc, SummarizerError) and exc.provider:
            detail = f"{exc.provider} summarizer (model {exc.model or 'unknown'}): {exc}"
        else:
            detail = str(exc)
        if isinstance(exc, CompactionRequestError) and on_vendor_route(request):
            return vendor_coded_error(problem.status, detail, exc.code)
        return problem_response(
            problem.status, problem.title, detail, problem.slug, vendor=on_vendor_route(request)
        )

    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return problem_response(
            exc.status, exc.title, exc.detail, exc.slug, vendor=on_vendor_route(request)
        )

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            message = next(e.get("ctx", {}).get("error", "") for e in errors)
            return problem_response(
                400,
                "Malformed JSON",
                f"the request body is not valid JSON ({message}); send a JSON object",
                "malformed-json",
                vendor=on_vendor_route(request),
            )
        detail, items = _describe_validation(errors)
        vendor = on_vendor_route(request)
        return problem_response(
            422, "Invalid request", detail, "invalid-request", items, vendor=vendor
        )

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        titles = {
            404: "Not found",
            405: "Method not allowed",
            413: "Payload too large",
            422: "Invalid request",
        }
        title = titles.get(exc.status_code, "HTTP error")
        return problem_response(
            exc.status_code,
            title,
            str(exc.detail),
            title.lower().replace(" ", "-"),
            vendor=on_vendor_route(request),
        )

    app.add_exception_handler(CompactorError, on_domain)
    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
