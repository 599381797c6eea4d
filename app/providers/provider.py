"""Provider: where a model is reached and as whom (base URL, auth, default headers and
query), separate from the wire protocol a model speaks (`openai_compat`, `anthropic`).

The same Chat Completions model code talks to OpenAI, Azure, OpenRouter, Ollama or vLLM;
only the `Provider` it is given differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import httpx

from app.providers.http import ProviderEndpoint


class AuthScheme(StrEnum):
    """How the API key travels."""

    BEARER = "bearer"  # Authorization: Bearer KEY (OpenAI and most compatible servers)
    API_KEY = "api-key"  # api-key: KEY (Azure OpenAI)
    X_API_KEY = "x-api-key"  # x-api-key: KEY (Anthropic)

    def headers(self, key: str | None) -> dict[str, str]:
        """The header carrying `key`; none without a key."""
        if not key:
            return {}
        if self is AuthScheme.BEARER:
            return {"authorization": f"Bearer {key}"}
        return {self.value: key}


@dataclass(frozen=True, slots=True)
class Provider:
    """A configured endpoint: base URL, key and how it is sent, default headers and query.
    The key stays out of reprs."""

    name: str
    base_url: str
    auth: AuthScheme = AuthScheme.BEARER
    api_key: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict)
    # Sent with every call, e.g. Azure's `api-version`.
    query: Mapping[str, str] = field(default_factory=dict)
    # The endpoint takes OpenAI's `prompt_cache_key` (others may refuse unknown fields).
    prompt_cache_key: bool = False

    def endpoint(
        self,
        path: str,
        *,
        model: str,
        timeout_seconds: float,
        headers: Mapping[str, str] | None = None,
    ) -> ProviderEndpoint:
        """Where one model's calls go: `{base_url}/{path}?{query}` with auth and headers."""
        url = f"{self.base_url.rstrip('/')}/{path.lstrip('/')}"
        if self.query:
            url = str(httpx.URL(url, params=dict(self.query)))
        return ProviderEndpoint(
            provider=self.name,
            model=model,
            url=url,
            timeout_seconds=timeout_seconds,
            headers={
                "content-type": "application/json",
                **self.headers,
                **(headers or {}),
                **self.auth.headers(self.api_key),
            },
            secret=self.api_key,
        )
