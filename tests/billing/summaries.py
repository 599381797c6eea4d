"""A model summarizer for the fake: answers a summary request with the sections SPEC §5
asks for, filled from the request's own text (deterministic, about 1,000 tokens), so a
bench can bill a model summarizer's prompts without a model."""

from __future__ import annotations

import re
from typing import Any

from tests.billing.answers import Reply
from tests.billing.server import Received

_CONVERSATION = re.compile(r"<conversation>\n(.*?)\n</conversation>", re.DOTALL)
_PREVIOUS = re.compile(r"<previous-summary>\n(.*?)\n</previous-summary>", re.DOTALL)
_LINE_CHARS = 200


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for item in value for t in _texts(item)]
    if isinstance(value, dict):
        return _texts(value.get("text", value.get("content", "")))
    return []


def request_text(body: Any) -> str:
    """Every text of a Messages or Chat Completions request, in order."""
    if not isinstance(body, dict):
        return ""
    parts = _texts(body.get("system", "")) + _texts(body.get("messages", []))
    return "\n".join(parts)


def _lines(text: str, count: int) -> list[str]:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return [line[:_LINE_CHARS] for line in lines[-count:]]


def summary_of(prompt: str) -> str:
    """The sections, from the conversation (and the previous summary) in `prompt`."""
    found = _CONVERSATION.search(prompt)
    conversation = found.group(1) if found else prompt
    previous = _PREVIOUS.search(prompt)
    lines = [line.strip() for line in conversation.splitlines() if line.strip()]
    goal = previous.group(1).split("\n", 2)[1] if previous else (lines[0] if lines else "")
    done = "\n".join(f"- [x] {line}" for line in _lines(conversation, 12))
    context = "\n".join(f"- {line}" for line in _lines(conversation, 6))
    return (
        f"## Goal\n{goal[:_LINE_CHARS]}\n\n## Constraints & Preferences\n- (none)\n\n"
        f"## Progress\n### Done\n{done}\n### In Progress\n- [ ] Continue the task\n"
        "### Blocked\n- (none)\n\n## Key Decisions\n- **Keep going**: the task is not done\n\n"
        f"## Next Steps\n1. Continue the task\n\n## Critical Context\n{context}"
    )


def summarizing(received: Received) -> Reply:
    """A `reply` for `BillingUpstream`: a summary of the summary request received."""
    return Reply(summary_of(request_text(received.body)))
