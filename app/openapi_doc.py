"""The committed OpenAPI document, generated from the app itself."""

from __future__ import annotations

import json

from app.main import create_app
from app.settings import Settings


def openapi_json() -> str:
    """The app's OpenAPI document as stable, sorted JSON text."""
    document = create_app(Settings()).openapi()
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
