"""The OpenAPI document as the app really answers: every error is problem+json, and the
statuses that middleware and dependencies add (401, 400, 408, 413, 422, 503, and 500 for
an unexpected failure) are declared on the operations they apply to."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from app.api.problems import PROBLEM_JSON, Problem

_PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
_UNAUTHENTICATED = {"/healthz", "/readyz", "/openapi.json", "/docs", "/redoc"}
_FASTAPI_PHRASES = {"Validation Error", "Successful Response"}
_DESCRIPTIONS = {
    400: "Malformed JSON",
    401: "Missing or wrong API key",
    404: "Not found",
    408: "The body did not arrive within COMPACTOR_BODY_TIMEOUT_SECONDS",
    409: "Conflict",
    413: "Body over the size limit",
    422: "The request is invalid; the detail says what to fix",
    499: "The client went away",
    500: "An unexpected failure; the detail names the request id to report",
    502: "The summarizer failed",
    503: "A dependency is unavailable, or too many uploads at once (Retry-After)",
    504: "The summarizer timed out",
}


def _problem_response(status: int, own: str | None) -> dict[str, Any]:
    generic = _DESCRIPTIONS.get(status, "Error")
    # FastAPI fills in reason phrases ("Validation Error"); a route's own description (the
    # titles of the errors it raises, from `documented`) says more.
    if own is None or own in _FASTAPI_PHRASES or own == HTTPStatus(status).phrase:
        description = generic
    elif status in (400, 422):
        # The generic cause (malformed JSON, a schema violation) applies to every body.
        description = f"{generic} (or: {own})"
    else:
        description = own
    return {
        "description": description,
        "content": {PROBLEM_JSON: {"schema": _PROBLEM_REF}},
    }


def _complete(operation: dict[str, Any], path: str) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    implied: set[int] = {500}
    if path not in _UNAUTHENTICATED:
        implied.add(401)
    if "requestBody" in operation:
        implied.update({400, 408, 413, 422, 503})
    if operation.get("parameters"):
        implied.add(422)
    for status in implied:
        responses.setdefault(str(status), {})
    for code in list(responses):
        if code.isdigit() and int(code) >= 400:
            # A route's own description (its error titles, from `documented`) wins.
            own = responses[code].get("description")
            responses[code] = _problem_response(int(code), own)


def install_problem_openapi(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """Replaces `app.openapi` with a generator that applies the rules above."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = get_openapi(
            title=app.title,
            version=app.version,
            summary=app.summary,
            description=app.description,
            routes=app.routes,
        )
        for path, operations in document.get("paths", {}).items():
            for operation in operations.values():
                _complete(operation, path)
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        schemas["Problem"] = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
        for unused in ("HTTPValidationError", "ValidationError"):
            schemas.pop(unused, None)
        app.openapi_schema = document
        return document

    app.openapi = build  # type: ignore[method-assign]
    return build
