"""Whether one request's prompt starts with the whole previous one: what a prompt cache can
read back, and what "the forwarded prefix is byte-stable between compactions" (SPEC §15)
means for a test. Compared as the fake bills: Anthropic blocks without `cache_control`,
OpenAI messages as rendered."""

from __future__ import annotations

from typing import Any

from tests.billing.anthropic_cache import prompt_blocks
from tests.billing.openai_cache import chat_segments, responses_segments
from tests.billing.refusals import Refused


def prompt_digests(api: str, body: Any) -> list[str] | None:
    """The chained digests of a request's prompt (`messages`, `chat` or `responses`);
    None for a body the vendor would refuse."""
    try:
        if api == "messages":
            return [block.digest for block in prompt_blocks(body)]
        segments = chat_segments(body) if api == "chat" else responses_segments(body)
        # Segments are hashed one by one: chain them so a digest names its whole prefix.
        chained, running = [], ""
        for segment in segments:
            running = f"{running}/{segment.digest}"
            chained.append(running)
        return chained
    except (Refused, KeyError, TypeError, AttributeError):
        return None


def extends(api: str, previous: Any, current: Any) -> bool:
    """True when `current`'s prompt starts with all of `previous`'s."""
    before, after = prompt_digests(api, previous), prompt_digests(api, current)
    if not before or after is None or len(before) > len(after):
        return False
    return after[len(before) - 1] == before[-1]
