"""Which wire format a request uses, when the caller did not say."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.formats import anthropic, openai

_ANTHROPIC_BLOCKS = {
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "image",
    "document",
}
_OPENAI_PARTS = {"image_url", "input_audio", "refusal", "file"}


def detect_format(messages: Sequence[Any], system: Any = None) -> str:
    """`openai` or `anthropic` from block types, OpenAI-only fields and a top-level system.

    Plain user/assistant string messages read the same in both; they are `openai` unless a
    top-level system prompt says otherwise.
    """
    return evidence_of_format(messages, system) or openai.FORMAT


def evidence_of_format(messages: Sequence[Any], system: Any = None) -> str | None:
    """The format the messages prove, or None while they read the same in both."""
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") in ("system", "developer", "tool"):
            return openai.FORMAT
        if "tool_calls" in message or "tool_call_id" in message:
            return openai.FORMAT
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                kind = block.get("type") if isinstance(block, dict) else None
                if kind in _ANTHROPIC_BLOCKS:
                    return anthropic.FORMAT
                if kind in _OPENAI_PARTS:
                    return openai.FORMAT
    return anthropic.FORMAT if system is not None else None
