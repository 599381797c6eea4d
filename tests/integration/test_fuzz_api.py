"""Property-based fuzzing of the whole API with schemathesis: no 5xx, and every status,
header and body conforms to the OpenAPI document (which test_openapi.py pins to the
committed openapi/openapi.json).

Operations are enumerated and driven with Hypothesis directly: schemathesis' own pytest
plugin does not support the pytest version used here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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
    for method in methods
    if not path.startswith("/v1/")
)


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


def test_every_operation_is_fuzzed() -> None:
    assert len(OPERATIONS) >= 15
    assert "POST /compact" in OPERATIONS and "POST /sessions/{session_id}/prepare" in OPERATIONS
    assert st is not None
