"""Recognizing an upstream's "the context is too long" answer (SPEC §10 overflow)."""

from __future__ import annotations

from typing import Any

import orjson

# OpenAI (Chat Completions and Responses) names the error by code; Anthropic says it in
# the message of an invalid_request_error.
_OPENAI_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
_MESSAGE_SIGNS = (
    "prompt is too long",
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "input is too long",
)


def is_context_overflow(status: int, body: bytes) -> bool:
    """True when the upstream refused the request because its context is too long."""
    if status == 413:
        return True
    if status != 400:
        return False
    try:
        payload: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return False
    if error.get("code") in _OPENAI_CODES:
        return True
    message = error.get("message")
    return isinstance(message, str) and any(sign in message.lower() for sign in _MESSAGE_SIGNS)
