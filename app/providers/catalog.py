"""The named providers a deployment can choose (by configuration only): the wire protocol
each speaks and how its endpoint is addressed and authenticated.

Adding an OpenAI-compatible endpoint is one entry here, not code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Literal

import httpx

from app.providers.provider import AuthScheme, Provider


class Wire(StrEnum):
    """The protocol a model is spoken to in (the "model" half of a summarizer)."""

    CHAT_COMPLETIONS = "chat-completions"
    ANTHROPIC_MESSAGES = "anthropic-messages"


ProviderName = Literal[
    "openai", "azure", "openrouter", "ollama", "vllm", "openai-compatible", "anthropic"
]


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """A named provider: its wire, default base URL, auth scheme and default headers."""

    name: ProviderName
    wire: Wire
    # None: the deployment must say where the server is.
    default_base_url: str | None
    auth: AuthScheme = AuthScheme.BEARER
    # A key is required at the hosted default base URL (or always, without one); pointed
    # elsewhere (a local gateway, a test server) the key is optional.
    key_required: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    # Azure: calls go to {base}/openai/deployments/{deployment} with ?api-version=.
    deployments: bool = False
    default_api_version: str | None = None
    # What a base URL looks like, for the error that asks for one.
    base_url_example: str = "http://HOST/v1"
    # Takes `prompt_cache_key` (OpenAI's routing hint for its prompt cache). Off where a
    # server may refuse fields it does not know (Azure answers 400 to unknown arguments).
    prompt_cache_key: bool = False

    def needs_key(self, base_url: str) -> bool:
        """True when calls to `base_url` cannot work without an API key."""
        if not self.key_required:
            return False
        if self.default_base_url is None:
            return True
        return httpx.URL(base_url).host == httpx.URL(self.default_base_url).host

    def configure(
        self,
        *,
        base_url: str,
        api_key: str | None,
        deployment: str,
        api_version: str | None = None,
    ) -> Provider:
        """The endpoint this spec describes at `base_url` (already validated)."""
        base = base_url.strip().rstrip("/")
        query: dict[str, str] = {}
        if self.deployments:
            # Accept the resource endpoint as the portal shows it, with or without /openai.
            base = base.removesuffix("/openai")
            base = f"{base}/openai/deployments/{deployment}"
            version = api_version or self.default_api_version
            if version:
                query["api-version"] = version
        return Provider(
            name=self.name,
            base_url=base,
            auth=self.auth,
            api_key=api_key or None,
            headers=dict(self.headers),
            query=query,
            prompt_cache_key=self.prompt_cache_key,
        )


_SPECS = (
    ProviderSpec(
        "openai",
        Wire.CHAT_COMPLETIONS,
        "https://api.openai.com/v1",
        key_required=True,
        prompt_cache_key=True,
    ),
    ProviderSpec(
        "azure",
        Wire.CHAT_COMPLETIONS,
        None,
        auth=AuthScheme.API_KEY,
        key_required=True,
        deployments=True,
        default_api_version="2024-10-21",
        base_url_example="https://RESOURCE.openai.azure.com",
    ),
    ProviderSpec(
        "openrouter",
        Wire.CHAT_COMPLETIONS,
        "https://openrouter.ai/api/v1",
        key_required=True,
        # OpenRouter attributes traffic to an app by this header.
        headers={"x-title": "context-compactor"},
    ),
    ProviderSpec("ollama", Wire.CHAT_COMPLETIONS, "http://localhost:11434/v1"),
    # No default: vLLM's own default port, 8000, is this service's too, so a default of
    # localhost:8000 would have the service summarize by calling itself.
    ProviderSpec(
        "vllm",
        Wire.CHAT_COMPLETIONS,
        None,
        base_url_example="http://VLLM-HOST:8000/v1 (vLLM's default port, 8000, is also "
        "this service's: run vLLM on another host or port)",
    ),
    ProviderSpec("openai-compatible", Wire.CHAT_COMPLETIONS, None),
    ProviderSpec(
        "anthropic",
        Wire.ANTHROPIC_MESSAGES,
        "https://api.anthropic.com",
        auth=AuthScheme.X_API_KEY,
        key_required=True,
    ),
)

PROVIDERS: Mapping[ProviderName, ProviderSpec] = MappingProxyType(
    {spec.name: spec for spec in _SPECS}
)
