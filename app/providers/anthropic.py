"""Anthropic Messages summarizer.

One call per attempt: `POST {provider base URL}/v1/messages` with the instruction as `system`, one
user message with the prompt, `max_tokens` = the output budget, and extended thinking with
a budget below `max_tokens` unless the level is `off`.

The call is cacheable (SPEC §15): a `cache_control` breakpoint (1 hour) ends the system
prompt, the same on every call, and another (5 minutes) the previous summary when there
is one, so the fixed instructions are written to Anthropic's prompt cache once and read on
later calls. The usage reported comes back with its cache reads and writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from pydantic import BaseModel

from app.engine.errors import SummarizerRejectedError
from app.engine.ports import SummaryRequest, SummaryResult, SummaryUsage
from app.engine.thinking import ThinkingLevel
from app.providers.http_summarizer import HttpSummarizer
from app.providers.provider import Provider

API_VERSION = "2023-06-01"

# Anthropic's smallest thinking budget; also what we leave for the summary text itself.
MIN_THINKING_BUDGET = 1024
THINKING_BUDGETS: dict[ThinkingLevel, int] = {
    ThinkingLevel.MINIMAL: 1024,
    ThinkingLevel.LOW: 2048,
    ThinkingLevel.MEDIUM: 8192,
    ThinkingLevel.HIGH: 16384,
}
# The fixed instructions are cached for an hour: one session's summaries come many
# minutes apart, past the 5-minute default, and a 1-hour write (2x) pays for itself from
# the first read (0.1x) — with one session, and more so with many sharing the prefix.
INSTRUCTIONS_CACHE: dict[str, str] = {"type": "ephemeral", "ttl": "1h"}
# The previous summary is resent only by a retry or a second fold of the same base,
# right away: the default 5 minutes (1.25x). Longer TTLs must come first, as here.
SUMMARY_CACHE: dict[str, str] = {"type": "ephemeral"}
# Both mean the output stopped at a limit before the summary was finished.
_TRUNCATED_STOPS = frozenset({"max_tokens", "model_context_window_exceeded"})


def thinking_budget(level: ThinkingLevel, max_tokens: int) -> int | None:
    """Tokens of extended thinking for `level`, below `max_tokens` with room left for the
    summary; None (no thinking) for `off` or when `max_tokens` is too small for both."""
    if level is ThinkingLevel.OFF:
        return None
    ceiling = max_tokens - MIN_THINKING_BUDGET
    if ceiling < MIN_THINKING_BUDGET:
        return None
    return max(MIN_THINKING_BUDGET, min(THINKING_BUDGETS[level], ceiling))


class _Block(BaseModel):
    type: str
    text: str | None = None


class _CacheCreation(BaseModel):
    ephemeral_1h_input_tokens: int | None = None


class _Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation: _CacheCreation | None = None


class MessagesAnswer(BaseModel):
    """The part of a Messages API answer the summarizer reads."""

    content: list[_Block]
    stop_reason: str | None = None
    usage: _Usage | None = None


class AnthropicSummarizer(HttpSummarizer):
    """Summarizer over the Anthropic Messages API."""

    headers: ClassVar[Mapping[str, str]] = MappingProxyType({"anthropic-version": API_VERSION})

    def path(self, provider: Provider) -> str:
        # Accept a base URL given with or without the version segment.
        return "messages" if provider.base_url.rstrip("/").endswith("/v1") else "v1/messages"

    def payload(self, request: SummaryRequest) -> dict[str, Any]:
        """The Messages API body of one attempt."""
        content: list[dict[str, Any]] = []
        for index, part in enumerate(request.prompt_parts):
            block: dict[str, Any] = {"type": "text", "text": part}
            if index == request.stable_parts - 1:
                block["cache_control"] = dict(SUMMARY_CACHE)
            content.append(block)
        body: dict[str, Any] = {
            "model": self._info.model,
            "max_tokens": request.max_output_tokens,
            "messages": [{"role": "user", "content": content}],
        }
        if request.system_prompt:
            body["system"] = [
                {
                    "type": "text",
                    "text": request.system_prompt,
                    "cache_control": dict(INSTRUCTIONS_CACHE),
                }
            ]
        budget = thinking_budget(request.thinking, request.max_output_tokens)
        if budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return body

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """One attempt; `stop_reason: max_tokens` comes back as `truncated`."""
        answer = await self._post(self.payload(request), MessagesAnswer)
        if answer.stop_reason == "refusal":
            raise self._endpoint.error(SummarizerRejectedError, "the model refused to summarize")
        texts: list[str] = []
        for index, block in enumerate(answer.content):
            if block.type != "text":
                continue  # thinking and redacted_thinking are the model's notes, not output
            if block.text is None:
                raise self._endpoint.error(
                    SummarizerRejectedError,
                    f"answered with a response of an unexpected shape (content.{index}.text: "
                    "missing in a text block)",
                )
            texts.append(block.text)
        usage = answer.usage or _Usage()
        read = usage.cache_read_input_tokens or 0
        written = usage.cache_creation_input_tokens or 0
        sent_thinking = thinking_budget(request.thinking, request.max_output_tokens) is not None
        return SummaryResult(
            text="".join(texts),
            truncated=answer.stop_reason in _TRUNCATED_STOPS,
            # Anthropic's input_tokens is only the uncached part: the prompt is all three.
            usage=SummaryUsage(
                usage.input_tokens + read + written,
                usage.output_tokens,
                read,
                written,
                (usage.cache_creation.ephemeral_1h_input_tokens or 0)
                if usage.cache_creation is not None
                else 0,
            ),
            # A budget too small for thinking sent none: report that, not the level asked.
            thinking=None if sent_thinking else ThinkingLevel.OFF,
        )
