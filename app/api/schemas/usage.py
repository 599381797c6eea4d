"""Provider usage reports, accepted exactly as the providers return them (SPEC §3).

The caller pastes `response.usage` and adds `message_index`. Three shapes are read:

- OpenAI Chat Completions: `prompt_tokens` (cached tokens included),
  `completion_tokens`, `total_tokens`, `prompt_tokens_details.cached_tokens`,
  `completion_tokens_details`.
- OpenAI Responses: `input_tokens` (cached tokens included), `output_tokens`,
  `total_tokens`, `input_tokens_details.cached_tokens`, `output_tokens_details`.
- Anthropic Messages (and this service's own fields): `input_tokens` (cached tokens
  not included), `output_tokens`, `cache_read_input_tokens`,
  `cache_creation_input_tokens`, `cache_creation`, `service_tier`, `server_tool_use`.

Each maps to one report of uncached input, output, cache read and cache write, so cached
tokens are never counted twice.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.api.limits import MAX_MESSAGES, MAX_TOKENS
from app.api.schemas.strict import StrictBody

Tokens = int | None


def _tokens(description: str | None = None) -> Any:
    return Field(default=None, ge=0, le=MAX_TOKENS, description=description)


class InputTokenDetails(BaseModel):
    """`prompt_tokens_details` / `input_tokens_details`: only the cached part is used."""

    model_config = ConfigDict(extra="allow")

    cached_tokens: Tokens = _tokens()


class UsageIn(StrictBody):
    """A provider usage report for the reply at `message_index`, pasted as returned."""

    model_config = ConfigDict(extra="forbid")

    message_index: int = Field(ge=0, le=MAX_MESSAGES)
    input_tokens: Tokens = _tokens(
        "Anthropic: uncached input; Responses (with input_tokens_details): all input."
    )
    output_tokens: Tokens = _tokens()
    cache_read_input_tokens: Tokens = _tokens()
    cache_creation_input_tokens: Tokens = _tokens()
    prompt_tokens: Tokens = _tokens("Chat Completions: all input, cached tokens included.")
    completion_tokens: Tokens = _tokens()
    total_tokens: Tokens = _tokens("Read for completeness; the parts are what count.")
    prompt_tokens_details: InputTokenDetails | None = None
    completion_tokens_details: dict[str, Any] | None = None
    input_tokens_details: InputTokenDetails | None = None
    output_tokens_details: dict[str, Any] | None = None
    cache_creation: dict[str, Any] | None = None
    service_tier: str | None = None
    server_tool_use: dict[str, Any] | None = None
    inference_geo: str | None = None
    iterations: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> UsageIn:
        if self.prompt_tokens is not None or self.completion_tokens is not None:
            mixed = [
                name
                for name in ("input_tokens", "output_tokens", "input_tokens_details")
                if getattr(self, name) is not None
            ]
            if mixed:
                raise ValueError(
                    "usage mixes OpenAI Chat Completions fields (prompt_tokens, "
                    f"completion_tokens) with {', '.join(mixed)}; paste one provider's "
                    "usage object as it was returned"
                )
        cached = self._cached()
        total_input = self.prompt_tokens if self.prompt_tokens is not None else self.input_tokens
        if cached and cached > (total_input or 0):
            raise ValueError(
                f"usage: {cached} cached tokens is more than the {total_input or 0} input "
                "tokens they are part of"
            )
        return self

    def _cached(self) -> int:
        details = self.prompt_tokens_details or self.input_tokens_details
        return (details.cached_tokens or 0) if details is not None else 0

    def report(self) -> dict[str, int]:
        """Uncached input, output, cache read and cache write, whatever shape was sent."""
        cached = self._cached()
        if self.prompt_tokens is not None or self.completion_tokens is not None:
            uncached = (self.prompt_tokens or 0) - cached
            output = self.completion_tokens or 0
        elif self.input_tokens_details is not None:
            uncached = (self.input_tokens or 0) - cached
            output = self.output_tokens or 0
        else:
            uncached = self.input_tokens or 0
            output = self.output_tokens or 0
            cached = 0
        return {
            "input_tokens": uncached,
            "output_tokens": output,
            "cache_read_input_tokens": cached + (self.cache_read_input_tokens or 0),
            "cache_creation_input_tokens": self.cache_creation_input_tokens or 0,
        }
