"""The committed OpenAPI document matches the running app."""

from __future__ import annotations

import json
from pathlib import Path

from app.openapi_doc import openapi_json

COMMITTED = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


def test_committed_openapi_matches_the_app() -> None:
    assert COMMITTED.exists(), "run: compactor openapi -o openapi/openapi.json"
    assert json.loads(COMMITTED.read_text("utf-8")) == json.loads(openapi_json()), (
        "openapi/openapi.json is stale; regenerate with: compactor openapi -o openapi/openapi.json"
    )


def test_every_error_status_is_declared() -> None:
    document = json.loads(openapi_json())
    estimate = document["paths"]["/estimate"]["post"]["responses"]
    compact = document["paths"]["/compact"]["post"]["responses"]
    assert {"200", "400", "413", "422"} <= set(estimate)
    assert {"200", "400", "413", "422", "502", "503", "504"} <= set(compact)
