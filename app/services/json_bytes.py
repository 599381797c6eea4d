"""Serializing JSON values for hashing: orjson when it can, the standard library when a
value is outside what orjson supports (integers beyond 64 bits)."""

from __future__ import annotations

import json
from typing import Any

import orjson


def json_bytes(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
