"""Property-based fuzzing of the whole API with schemathesis: no 5xx, and every status,
header and body conforms to the OpenAPI document (which test_openapi.py pins to the
committed openapi/openapi.json).

Operations are enumerated and driven with Hypothesis directly: schemathesis' own pytest
plugin does not support the pytest version used here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from app.main import create_app
from app.openapi_doc import openapi_json
from app.settings import Settings

# The proxy routes (/v1/...) answer with whatever status the upstream gives, 5xx
# included, or 503 with no upstream configured: they are tested against fake upstreams
# in tests/integration/proxy instead.
OPERATIONS = sorted(
    f"{method.upper()} {path}"
    for path, methods in json.loads(openapi_json())["paths"].items()
    for method, operation in methods.items()
    if not path.startswith("/v1/") and "proxy" not in operation.get("tags", [])
)

# Relayed to an upstream, whose statuses (5xx included) reach the caller unchanged. The
# vendor counting and compaction routes (/v1/messages/count_tokens, ...) answer locally
# and are fuzzed like the rest.
RELAYED = {"/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/models"}


def _path_only(operation: dict[str, Any]) -> bool:
    """Its only input is the path: schemathesis can negate nothing but a path segment,
    and spends seconds of generation to come up with one case (measured: 1 of 25)."""
    parameters = operation.get("parameters") or []
    return (
        bool(parameters)
        and not operation.get("requestBody")
        and all(p["in"] == "path" for p in parameters)
    )


_LOCAL = [
    (path, method, operation)
    for path, methods in json.loads(openapi_json())["paths"].items()
    for method, operation in methods.items()
    if path not in RELAYED and not path.startswith("/v1/models/")
]
# Operations that take a query or a body: the ones with invalid cases to generate.
WITH_INPUT = sorted(
    f"{method.upper()} {path}"
    for path, method, operation in _LOCAL
    if (operation.get("parameters") or operation.get("requestBody"))
    and not _path_only(operation)
    and "proxy" not in operation.get("tags", [])
)
# Operations on one session and nothing else: their invalid inputs are listed instead.
PATH_ONLY = sorted(
    f"{method.upper()} {path}" for path, method, operation in _LOCAL if _path_only(operation)
)
# Outside the session id's schema (1-200 characters, no NUL), and odd ones within it.
# ".." is a dot segment the HTTP client resolves before sending (RFC 3986 §5.2.4): the
# request would be for "/", not for a session. "..." is sent as it is.
BAD_SESSION_IDS = ["x" * 201, "é" * 201, "a\x00b", "\x00", "...", "%", "\U0001f600" * 3, "0" * 5000]
PROBLEM_JSON = "application/problem+json"
UNKNOWN_ID = "00000000-0000-0000-0000-000000000000"


@schemathesis.serializer("application/x-ndjson")
def _json_lines(ctx: schemathesis.SerializationContext, value: Any) -> bytes:
    """A session bundle (POST /sessions/import) is sent as generated: bytes, or JSON."""
    return value if isinstance(value, bytes) else json.dumps(value).encode()


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    app = create_app(Settings(database_url=f"sqlite:///{folder / 'fuzz.db'}"))
    with TestClient(app):  # runs the lifespan: migrations, tokenizers, readiness
        yield schemathesis.openapi.from_asgi("/openapi.json", app)


@pytest.mark.parametrize("label", OPERATIONS)
def test_api_never_fails_and_conforms_to_its_schema(api: Any, label: str) -> None:
    method, path = label.split(" ", 1)
    operation = api[path][method]

    @given(case=operation.as_strategy())
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def check(case: Any) -> None:
        # A schema-valid body can still be refused with 422: a message's validity depends
        # on its role and wire format, which the JSON Schema here does not express.
        case.call_and_validate(excluded_checks=[positive_data_acceptance])

    check()


@pytest.mark.parametrize("label", WITH_INPUT)
def test_invalid_input_never_fails_with_5xx(api: Any, label: str) -> None:
    """Negative cases (values outside the schema: wrong types, out-of-range integers,
    unknown fields) are refused with a 4xx, never a 5xx."""
    method, path = label.split(" ", 1)
    operation = api[path][method]

    @given(case=operation.as_strategy(generation_mode=GenerationMode.NEGATIVE))
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def check(case: Any) -> None:
        response = case.call()
        assert response.status_code < 500, (case.path, case.query, response.text[:300])

    try:
        check()
    except Unsatisfiable:
        pytest.skip(f"{label}: its schema admits every value, so nothing is invalid")


@pytest.mark.parametrize("label", PATH_ONLY)
def test_invalid_session_ids_are_4xx(api: Any, label: str) -> None:
    method, path = label.split(" ", 1)
    operation = api[path][method]
    # Other path parameters (a compaction id) get a well-formed value that names nothing.
    others = {name: UNKNOWN_ID for name in re.findall(r"{(\w+)}", path) if name != "session_id"}
    for session_id in BAD_SESSION_IDS:
        response = operation.Case(path_parameters={"session_id": session_id, **others}).call()
        assert 400 <= response.status_code < 500, (label, session_id[:20], response.text[:300])


HUGE_INTEGERS = [2**63 - 1, 2**63, 2**64 + 1, -(2**63) - 1, 10**40]


def test_huge_integers_in_query_parameters_are_4xx(api: Any) -> None:
    """Every integer query parameter of every operation, at and past 64 bits."""
    spec = json.loads(openapi_json())
    asked = 0
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] != "query" or parameter["schema"].get("type") != "integer":
                    continue
                for value in HUGE_INTEGERS:
                    case = api[path][method].Case(
                        path_parameters={"session_id": "00000000-0000-0000-0000-000000000000"},
                        query={parameter["name"]: value},
                    )
                    response = case.call()
                    asked += 1
                    assert response.status_code < 500, (path, parameter["name"], value)
                    content_type = response.headers["content-type"][0]
                    assert content_type.startswith(("application/json", PROBLEM_JSON))
    assert asked >= 4 * len(HUGE_INTEGERS)


def test_every_operation_is_fuzzed() -> None:
    assert len(OPERATIONS) >= 15
    assert "POST /compact" in OPERATIONS and "POST /sessions/{session_id}/prepare" in OPERATIONS
    # Every operation with input gets invalid input: generated, or listed for the path.
    assert "GET /sessions/{session_id}" in PATH_ONLY and "POST /compact" in WITH_INPUT
    assert "POST /sessions/{session_id}/prepare" in WITH_INPUT  # it takes `dry_run`
    assert set(PATH_ONLY).isdisjoint(WITH_INPUT)
    assert st is not None
