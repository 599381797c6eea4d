"""Reading an upstream's model list for its context windows (SPEC §18,
COMPACTOR_MODELS_FROM_UPSTREAM).

Two shapes are understood: the OpenAI-style `GET {base}/models`, where some servers add a
window to each entry (OpenRouter's `context_length` and `top_provider`, vLLM's
`max_model_len`), and LiteLLM's `GET {root}/model/info` (`model_info.max_input_tokens`,
and `litellm_params.model`, the model an alias stands for). Entries without a window
are kept (an alias still tells which model a name stands for).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from app.engine.models import PublishedModel

# A model list is small (OpenRouter's ~400 models are ~1 MB); a larger reply is refused.
MAX_LIST_BYTES = 16 * 1024 * 1024


class ModelListError(Exception):
    """The model list could not be read or understood (the message says why)."""


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _TopProvider(_Lenient):
    context_length: int | None = None
    max_completion_tokens: int | None = None


class _ListedModel(_Lenient):
    id: str
    context_length: int | None = None  # OpenRouter
    max_model_len: int | None = None  # vLLM
    top_provider: _TopProvider | None = None  # OpenRouter


class _ModelList(_Lenient):
    data: list[_ListedModel]


class _LiteLLMParams(_Lenient):
    model: str | None = None


class _LiteLLMInfo(_Lenient):
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None


class _LiteLLMModel(_Lenient):
    model_name: str
    litellm_params: _LiteLLMParams | None = None
    model_info: _LiteLLMInfo | None = None


class _LiteLLMModelInfo(_Lenient):
    data: list[_LiteLLMModel]


_Shape = TypeVar("_Shape", bound=BaseModel)


def _positive(*values: int | None) -> int | None:
    return next((v for v in values if v is not None and v > 0), None)


class _ModelListBase:
    def __init__(self, client: httpx.AsyncClient, url: str, api_key: str | None) -> None:
        self._client = client
        self._url = url
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}

    @property
    def label(self) -> str:
        """The URL without user, password or query (safe for logs)."""
        url = httpx.URL(self._url)
        return str(url.copy_with(userinfo=b"", query=None))

    async def _get(self) -> bytes | None:
        """The list's bytes; None when the upstream publishes no such list (404)."""
        try:
            async with self._client.stream("GET", self._url, headers=self._headers) as answer:
                if answer.status_code == 404:
                    return None
                if answer.status_code != 200:
                    hint = ""
                    if answer.status_code in (401, 403):
                        hint = "; set COMPACTOR_UPSTREAM_MODELS_API_KEY"
                    raise ModelListError(f"it answered {answer.status_code}{hint}")
                body = bytearray()
                async for chunk in answer.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_LIST_BYTES:
                        raise ModelListError(f"the list is over {MAX_LIST_BYTES} bytes")
                return bytes(body)
        except httpx.HTTPError as exc:
            raise ModelListError(f"unreachable ({type(exc).__name__})") from exc

    async def _read(self, shape: type[_Shape], what: str) -> _Shape | None:
        """The list read as `shape`; None when the upstream publishes none."""
        body = await self._get()
        if body is None:
            return None
        try:
            return shape.model_validate_json(body)
        except ValidationError as exc:
            raise ModelListError(f"not {what} ({exc.error_count()} errors)") from None


class OpenAIModelList(_ModelListBase):
    """`GET {base}/models`: OpenRouter's and vLLM's lists carry each model's window."""

    async def fetch(self) -> Sequence[PublishedModel]:
        """The listed models with the window each entry gives."""
        listed = await self._read(_ModelList, "an OpenAI-style model list")
        models = []
        for entry in listed.data if listed is not None else ():
            top = entry.top_provider or _TopProvider()
            window = _positive(entry.context_length, entry.max_model_len, top.context_length)
            models.append(
                PublishedModel(
                    name=entry.id,
                    context_window=window,
                    max_output_tokens=_positive(top.max_completion_tokens),
                )
            )
        return models


class LiteLLMModelInfo(_ModelListBase):
    """LiteLLM's `GET {root}/model/info`: each alias, its model and its input window."""

    async def fetch(self) -> Sequence[PublishedModel]:
        """Every configured model name with its window and the model it stands for."""
        listed = await self._read(_LiteLLMModelInfo, "a LiteLLM /model/info answer")
        models = []
        for entry in listed.data if listed is not None else ():
            info = entry.model_info or _LiteLLMInfo()
            params = entry.litellm_params or _LiteLLMParams()
            models.append(
                PublishedModel(
                    name=entry.model_name,
                    context_window=_positive(info.max_input_tokens),
                    max_output_tokens=_positive(info.max_output_tokens),
                    underlying=params.model,
                )
            )
        return models
