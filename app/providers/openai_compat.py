"""OpenAI-compatible Chat Completions summarizer (OpenAI, Azure, vLLM, Ollama, OpenRouter…).

One call per attempt: `POST {provider base URL}/chat/completions` with the system instruction and
the prompt, no tools, the output budget, and `reasoning_effort` when thinking is on.

The call is cacheable (SPEC §15): it starts with the same system message every time, which
OpenAI caches on its own; providers that take a `prompt_cache_key` (OpenAI) get the
request's stable key, so every summary call reaches the cache holding that prefix. The
cached tokens the provider reports come back in the usage.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from app.engine.errors import SummarizerRejectedError
from app.engine.ports import SummaryRequest, SummaryResult, SummaryUsage
from app.engine.thinking import ThinkingLevel
from app.providers.http_summarizer import HttpSummarizer
from app.providers.provider import Provider

# OpenAI's reasoning families refuse `max_tokens`; they take `max_completion_tokens`.
_REASONING_FAMILY = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)
# Local reasoning models often inline their thoughts before the answer.
_LEADING_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)


class _Message(BaseModel):
    content: str | None = None
    refusal: str | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: str | None = None


class _PromptDetails(BaseModel):
    cached_tokens: int | None = None
    # Reported by models that bill cache writes (GPT-5.6 and later).
    cache_write_tokens: int | None = None


class _Usage(BaseModel):
    # Some compatible servers send nulls here; usage is a report, not worth failing over.
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: _PromptDetails | None = None


class ChatCompletion(BaseModel):
    """The part of a Chat Completions answer the summarizer reads."""

    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage | None = None


def budget_field(model: str) -> str:
    """`max_completion_tokens` for OpenAI reasoning families, `max_tokens` otherwise."""
    name = model.rsplit("/", 1)[-1]
    return "max_completion_tokens" if _REASONING_FAMILY.match(name) else "max_tokens"


class OpenAICompatibleSummarizer(HttpSummarizer):
    """Summarizer over any server that speaks OpenAI Chat Completions; where it is and
    how it authenticates is the `provider`'s business."""

    def path(self, provider: Provider) -> str:
        return "chat/completions"

    def payload(self, request: SummaryRequest) -> dict[str, Any]:
        """The Chat Completions body of one attempt."""
        body: dict[str, Any] = {
            "model": self._info.model,
            "messages": [
                {"role": "system", "content": request.system_prompt},
                {"role": "user", "content": request.prompt},
            ],
            budget_field(self._info.model): request.max_output_tokens,
            "stream": False,
        }
        if self._provider.prompt_cache_key and request.cache_key:
            body["prompt_cache_key"] = request.cache_key
        if request.thinking is not ThinkingLevel.OFF:
            body["reasoning_effort"] = request.thinking.value
        return body

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """One attempt; `finish_reason: length` comes back as `truncated`."""
        answer = await self._post(self.payload(request), ChatCompletion)
        choice = answer.choices[0]
        text = choice.message.content or ""
        if choice.finish_reason == "content_filter":
            raise self._endpoint.error(
                SummarizerRejectedError, "the provider's content filter stopped the summary"
            )
        if not text.strip() and choice.message.refusal:
            raise self._endpoint.error(
                SummarizerRejectedError, f"the model refused: {choice.message.refusal}"
            )
        usage = answer.usage or _Usage()
        details = usage.prompt_tokens_details or _PromptDetails()
        return SummaryResult(
            text=_LEADING_THINK.sub("", text, count=1),
            truncated=choice.finish_reason == "length",
            # OpenAI's prompt_tokens already includes the cached ones.
            usage=SummaryUsage(
                usage.prompt_tokens or 0,
                usage.completion_tokens or 0,
                details.cached_tokens or 0,
                details.cache_write_tokens or 0,
            ),
        )
