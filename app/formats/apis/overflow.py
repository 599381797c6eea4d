"""Recognizing an upstream's "the context is too long" answer (SPEC §10 overflow)."""

from __future__ import annotations

from typing import Any

import orjson


def is_context_overflow(
    status: int, body: bytes, codes: frozenset[str], message_signs: tuple[str, ...]
) -> bool:
    """True when the answer is HTTP 413, or a 400 whose `error` carries one of `codes`
    or says one of `message_signs` (lower case) in its message."""
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
    if isinstance(error.get("code"), str) and error["code"] in codes:
        return True
    message = error.get("message")
    return isinstance(message, str) and any(sign in message.lower() for sign in message_signs)


# OpenAI (Chat Completions and Responses) names the error by code; Anthropic says it in the
# message of an invalid_request_error. Each API checks both: gateways in front of an
# upstream (LiteLLM, OpenRouter) often answer in the other vendor's words.
OVERFLOW_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
OVERFLOW_MESSAGES = (
    "prompt is too long",
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "input is too long",
)
