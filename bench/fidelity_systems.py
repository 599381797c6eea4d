"""The three summarizers bench/fidelity.py compares, run through the service's own path.

- extractive: the default summarizer, as `/compact` runs it (CompactionService.compact).
- forgetful model + restoration: a fake model that keeps half of the previous summary's
  lines (chosen by a hash, so it is deterministic) and nothing of the new messages; the
  service's restoration step (pinned facts) runs after it, as for any model.
- trim_messages floor: LangChain's `trim_messages(strategy="last")` over the folded messages,
  at the extractive summary's token count: what the same budget holds without a summary.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, trim_messages

from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.serialize import serialize_for_summary
from app.engine.messages import Role
from app.engine.ports import SummarizerInfo, SummaryRequest, SummaryResult, Tokenizer
from app.formats.registry import FORMATS

_HEADINGS = (
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
)


def _kept(line: str) -> bool:
    return hashlib.sha1(line.strip().encode()).digest()[0] % 2 == 0


class ForgetfulModel:
    """A model summary that drops things: half of what the previous summary said, and
    nothing about the new messages beyond one vague line."""

    @property
    def info(self) -> SummarizerInfo:
        return SummarizerInfo(provider="fake", model="forgetful")

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        previous = request.previous_summary or ""
        body = SummaryMarker.parse(previous) or previous
        kept: dict[str, list[str]] = {h: [] for h in _HEADINGS}
        heading = "## Critical Context"
        for line in body.splitlines():
            stripped = line.strip()
            if stripped in kept:
                heading = stripped
            elif re.match(r"^#{2,3} ", stripped):
                # A section it was not asked for (the service's Current Request): dropped.
                heading = ""
            elif heading and stripped and stripped != "(none)" and _kept(stripped):
                kept[heading].append(line)
        kept["### Done"].append("- [x] Worked on the task.")
        kept["## Next Steps"] = ["1. Continue the task."]
        text = "\n\n".join(f"{h}\n" + ("\n".join(lines) or "(none)") for h, lines in kept.items())
        return SummaryResult(text=text)


def folded_texts(wire_messages: Sequence[Any], fmt: str) -> list[tuple[Role, str]]:
    """Each wire message as (role, role-labelled text), as a reader of it would see it."""
    parsed = FORMATS.get(fmt).parse(list(wire_messages)).messages
    return [(m.role, serialize_for_summary([m], tool_result_limit=10**9)) for m in parsed]


def trim_floor(texts: Sequence[tuple[Role, str]], budget: int, tokenizer: Tokenizer) -> str:
    """The newest folded messages that fit `budget` tokens, by LangChain's trim_messages."""
    messages: list[BaseMessage] = [
        AIMessage(content=text) if role is Role.ASSISTANT else HumanMessage(content=text)
        for role, text in texts
    ]

    sizes = {id(m): tokenizer.count(str(m.content)) for m in messages}

    def count(batch: list[BaseMessage]) -> int:
        return sum(sizes.get(id(m)) or tokenizer.count(str(m.content)) for m in batch)

    kept = trim_messages(
        messages, max_tokens=budget, token_counter=count, strategy="last", allow_partial=True
    )
    return "\n\n".join(str(m.content) for m in kept)
