"""Serializing JSON values for hashing: orjson when it can, the standard library when a
value is outside what orjson supports (integers beyond 64 bits)."""

from __future__ import annotations

import json
from typing import Any

import orjson

from app.engine.errors import InvalidHistoryError

# orjson's own serialization limit; deeper values are refused rather than half-handled.
MAX_NESTING = 254


def json_bytes(value: Any, where: str = "body") -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError as exc:
        if "Recursion limit" in str(exc):
            raise InvalidHistoryError(
                f"{where}: JSON nested deeper than {MAX_NESTING} levels; flatten it",
                where=where,
            ) from exc
        # "surrogatepass": a lone surrogate (which orjson refuses) still hashes.
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8", "surrogatepass")
