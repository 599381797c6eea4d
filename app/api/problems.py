"""RFC 9457 problem details: the one place domain errors become HTTP statuses."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from app.engine.errors import (
    CallerGoneError,
    CompactorError,
    IneffectiveCompactionError,
    InvalidHistoryError,
    NothingToCompactError,
    SummarizerError,
    SummarizerRejectedError,
    SummarizerTimeoutError,
    SummarizerUnavailableError,
)
from app.engine.system_prompt import InvalidSystemPromptError
from app.services.sessions.errors import (
    CompactionConflictError,
    IdempotencyMismatchError,
    RejectedValueError,
    SchemaNotAtHeadError,
    SessionNotFoundError,
    StoreUnavailableError,
)
from app.services.workspace import WorkspaceAccessError

PROBLEM_JSON = "application/problem+json"


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
    status: int, title: str, detail: str, slug: str, errors: list[dict[str, Any]] | None = None
) -> Response:
    body: dict[str, Any] = {
        "type": f"https://context-compactor.dev/problems/{slug}",
        "title": title,
        "status": status,
        "detail": detail,
    }
    if errors is not None:
        body["errors"] = errors
    return Response(orjson.dumps(body), status_code=status, media_type=PROBLEM_JSON)


# Domain error → (status, title, slug). Order matters: subclasses before their bases.
_DOMAIN_STATUS: list[tuple[type[CompactorError], int, str, str]] = [
    (InvalidHistoryError, 422, "Invalid history", "invalid-history"),
    (InvalidSystemPromptError, 422, "Invalid system prompt request", "invalid-system-prompt"),
    (WorkspaceAccessError, 403, "Outside the workspace", "workspace-access-denied"),
    (NothingToCompactError, 409, "Nothing to compact", "nothing-to-compact"),
    (
        IneffectiveCompactionError,
        409,
        "Compaction would not shrink the history",
        "compaction-ineffective",
    ),
    (SessionNotFoundError, 404, "Session not found", "session-not-found"),
    (CompactionConflictError, 409, "Compaction conflict", "compaction-conflict"),
    (IdempotencyMismatchError, 422, "Idempotency key reused", "idempotency-key-reused"),
    (RejectedValueError, 422, "Value refused by the store", "value-refused"),
    (SchemaNotAtHeadError, 503, "Database schema out of date", "schema-not-at-head"),
    (StoreUnavailableError, 503, "Session store unavailable", "store-unavailable"),
    (SummarizerTimeoutError, 504, "Summarizer timed out", "summarizer-timeout"),
    (SummarizerUnavailableError, 503, "Summarizer unavailable", "summarizer-unavailable"),
    (SummarizerRejectedError, 502, "Summarizer rejected the request", "summarizer-rejected"),
    (SummarizerError, 502, "Summarizer failed", "summarizer-failed"),
    (CallerGoneError, 499, "Client closed request", "client-closed"),
]


def status_for(exc: CompactorError) -> tuple[int, str, str]:
    for kind, status, title, slug in _DOMAIN_STATUS:
        if isinstance(exc, kind):
            return status, title, slug
    return 400, "Bad request", "bad-request"


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
        status, title, slug = status_for(exc)
        if isinstance(exc, SummarizerError) and exc.provider:
            detail = f"{exc.provider} summarizer (model {exc.model or 'unknown'}): {exc}"
        else:
            detail = str(exc)
        return problem_response(status, title, detail, slug)

    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return problem_response(exc.status, exc.title, exc.detail, exc.slug)

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
            )
        detail, items = _describe_validation(errors)
        return problem_response(422, "Invalid request", detail, "invalid-request", items)

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
            exc.status_code, title, str(exc.detail), title.lower().replace(" ", "-")
        )

    app.add_exception_handler(CompactorError, on_domain)
    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
