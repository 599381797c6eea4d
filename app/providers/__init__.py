"""LLM summarizers over HTTP: one module per wire format, sharing `http` for transport.

Each adapter implements `app.engine.ports.Summarizer` over one shared `httpx.AsyncClient`
and turns every transport or protocol failure into one of the engine's summarizer errors.
"""

from app.providers.anthropic import AnthropicSummarizer
from app.providers.http import ProviderEndpoint, RetryPolicy
from app.providers.openai_compat import OpenAICompatibleSummarizer

__all__ = [
    "AnthropicSummarizer",
    "OpenAICompatibleSummarizer",
    "ProviderEndpoint",
    "RetryPolicy",
]
