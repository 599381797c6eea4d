"""LLM summarizers over HTTP, split as provider (where and as whom: `provider`, `catalog`)
and model (the wire protocol: `openai_compat`, `anthropic`), sharing `http` for transport.

Each model adapter implements `app.engine.ports.Summarizer` over one shared
`httpx.AsyncClient` and turns every transport or protocol failure into one of the
engine's summarizer errors.
"""

from app.providers.anthropic import AnthropicSummarizer
from app.providers.catalog import PROVIDERS, ProviderName, ProviderSpec, Wire
from app.providers.http import ProviderEndpoint, RetryPolicy
from app.providers.openai_compat import OpenAICompatibleSummarizer
from app.providers.provider import AuthScheme, Provider

__all__ = [
    "PROVIDERS",
    "AnthropicSummarizer",
    "AuthScheme",
    "OpenAICompatibleSummarizer",
    "Provider",
    "ProviderEndpoint",
    "ProviderName",
    "ProviderSpec",
    "RetryPolicy",
    "Wire",
]
