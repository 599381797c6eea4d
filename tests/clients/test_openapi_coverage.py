"""The Python client covers every REST operation and field of openapi/openapi.json."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from context_compactor import AsyncCompactorClient, CompactorClient

from tests.clients.openapi_coverage import Checker, rest_operations

DOCUMENT = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DOCUMENT.read_text())
    return doc


def problems(doc: dict[str, Any]) -> list[str]:
    return Checker(doc, CompactorClient, AsyncCompactorClient).run()


def test_every_operation_and_field_is_covered(document: dict[str, Any]) -> None:
    assert problems(document) == []
    assert len(list(rest_operations(document))) >= 16


def test_the_proxy_routes_and_html_pages_are_left_to_sdks_and_browsers(
    document: dict[str, Any],
) -> None:
    doc = copy.deepcopy(document)
    doc["paths"]["/v1/chat/completions"] = {"post": {"responses": {"200": {}}}}
    html = {"200": {"content": {"text/html": {"schema": {"type": "string"}}}}}
    doc["paths"]["/ui"] = {"get": {"responses": html}}
    doc["paths"]["/ui/sessions/{session_id}"] = {"get": {"responses": html}}
    assert problems(doc) == []


def test_drift_is_reported(document: dict[str, Any]) -> None:
    doc = copy.deepcopy(document)
    schemas = doc["components"]["schemas"]
    schemas["CompactIn"]["properties"]["budget"] = {"type": "integer"}
    schemas["PrepareOut"]["properties"]["hint"] = {"type": "string"}
    schemas["RestoredFactOut"]["properties"]["source"] = {"type": "string"}
    schemas["ThinkingLevel"]["enum"].append("max")
    schemas["CompactOut"]["properties"]["format"]["enum"].append("mistral")
    doc["paths"]["/sessions/{session_id}/merge"] = {"post": {"responses": {"200": {}}}}
    doc["paths"]["/sessions"]["get"]["parameters"].append(
        {"name": "tenant", "in": "query", "schema": {"type": "string"}}
    )
    found = "\n".join(problems(doc))
    assert "POST /compact request: field 'budget' not covered" in found
    assert "POST /sessions/{session_id}/prepare answer: field 'hint' not covered" in found
    assert "answer.restored_facts: field 'source' not covered" in found
    assert "'thinking' lacks enum values ['max']" in found
    assert "'format' lacks enum values ['mistral']" in found
    assert "POST /sessions/{session_id}/merge: no client method" in found
    assert "GET /sessions: query 'tenant' not sent" in found
