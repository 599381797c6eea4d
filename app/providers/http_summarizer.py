"""The part every HTTP summarizer shares: its client, retries, registry info, endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import httpx

from app.engine.models import ModelInfo
from app.engine.ports import SummarizerInfo
from app.providers.http import ResponseT, RetryPolicy, post_json, registry_info
from app.providers.provider import Provider


class HttpSummarizer:
    """What every HTTP summarizer holds: the client, the retry policy, what it reports
    about itself and the endpoint its `path` names under the provider's base URL."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        model: str,
        entry: ModelInfo,
        provider: Provider,
        timeout_seconds: float = 120.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._client = client
        self._retry = retry or RetryPolicy()
        self._provider = provider
        self._info = registry_info(provider.name, model, entry)
        self._endpoint = provider.endpoint(
            self.path(provider), model=model, timeout_seconds=timeout_seconds, headers=self.headers
        )

    headers: ClassVar[Mapping[str, str] | None] = None
    """Headers the wire protocol needs on every call (its version, not the endpoint's)."""

    def path(self, provider: Provider) -> str:
        """The call's path under the provider's base URL."""
        raise NotImplementedError

    @property
    def info(self) -> SummarizerInfo:
        return self._info

    async def _post(self, payload: Mapping[str, Any], answer: type[ResponseT]) -> ResponseT:
        return await post_json(self._client, self._endpoint, payload, answer, self._retry)
