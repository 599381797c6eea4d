"""A LiteLLM proxy hook: compact each request's history through a context-compactor
service before LiteLLM calls the model.

One line of LiteLLM's `config.yaml` turns it on::

    litellm_settings:
      callbacks: context_compactor.integrations.litellm.handler

and the service is named by `COMPACTOR_URL` (and `COMPACTOR_KEY` when it has API keys).

What it compacts (LiteLLM's `async_pre_call_hook`):
- chat completions (`/chat/completions`, call type `completion`/`acompletion`): the
  OpenAI `messages`;
- Anthropic `/v1/messages` (call type `anthropic_messages`) and the Anthropic
  pass-through (`/anthropic/v1/messages`, call type `pass_through_endpoint`): the
  Anthropic `messages`, with `system` and `tools` counted.

Stateless by default: the history goes to `POST /compact` (the request's `model`
decides the window) and, when compacted, the summary plus the kept messages replace it.
A request may set its own threshold inputs in `metadata: {"compactor": {"trigger_tokens":
…}}` (`context_window`, `reserve_tokens`, `trigger_tokens`, `keep_recent_tokens`). A
request that names a session (`metadata: {"compactor_session": "<id>"}` in the body, or
an `X-Compactor-Session` header) is bound to that stored session instead: the messages
the session does not have yet are appended, `prepare` compacts when it is due, and the
session's context is what LiteLLM sends. A service that cannot be reached fails open: the
request goes on as it came. Install with the `[litellm]` extra.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from context_compactor import AsyncCompactorClient, CompactorAPIError

log = logging.getLogger("context_compactor.litellm")

CHAT_CALLS = frozenset({"completion", "acompletion"})
ANTHROPIC_CALLS = frozenset({"anthropic_messages", "aanthropic_messages"})
PASS_THROUGH = "pass_through_endpoint"
SESSION_FIELD = "compactor_session"
OPTIONS_FIELD = "compactor"
SESSION_HEADER = "x-compactor-session"
# What a request may set for its own compaction (metadata.compactor): the threshold's inputs.
REQUEST_OPTIONS = frozenset(
    {"context_window", "reserve_tokens", "trigger_tokens", "keep_recent_tokens"}
)


def _session_of(data: Mapping[str, Any]) -> str | None:
    """The session a request names: a metadata field, or the X-Compactor-Session header."""
    for key in ("metadata", "litellm_metadata"):
        metadata = data.get(key)
        if isinstance(metadata, Mapping):
            value = metadata.get(SESSION_FIELD)
            if isinstance(value, str) and value.strip():
                return value.strip()
            headers = metadata.get("headers")
            if isinstance(headers, Mapping):
                found = _header(headers)
                if found:
                    return found
    request = data.get("proxy_server_request")
    if isinstance(request, Mapping) and isinstance(request.get("headers"), Mapping):
        return _header(request["headers"])
    return None


def _request_options(data: Mapping[str, Any]) -> dict[str, Any]:
    """The request's own threshold settings (`metadata.compactor`), known keys only."""
    for key in ("metadata", "litellm_metadata"):
        metadata = data.get(key)
        if isinstance(metadata, Mapping) and isinstance(metadata.get(OPTIONS_FIELD), Mapping):
            given = metadata[OPTIONS_FIELD]
            return {k: v for k, v in given.items() if k in REQUEST_OPTIONS and isinstance(v, int)}
    return {}


def _without_own_fields(data: dict[str, Any]) -> dict[str, Any]:
    """`data` minus this hook's metadata fields: the model's API would refuse them."""
    out = dict(data)
    for key in ("metadata", "litellm_metadata"):
        metadata = out.get(key)
        if isinstance(metadata, Mapping) and (
            SESSION_FIELD in metadata or OPTIONS_FIELD in metadata
        ):
            kept = {k: v for k, v in metadata.items() if k not in (SESSION_FIELD, OPTIONS_FIELD)}
            if kept:
                out[key] = kept
            else:
                del out[key]
    return out


def _header(headers: Mapping[str, Any]) -> str | None:
    for name, value in headers.items():
        if str(name).lower() == SESSION_HEADER and isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _wire_format(data: Mapping[str, Any], call_type: str) -> str | None:
    """`openai` or `anthropic` for a request this hook compacts; None for the rest."""
    if not isinstance(data.get("messages"), list) or not data["messages"]:
        return None
    if call_type in CHAT_CALLS:
        return "openai"
    if call_type in ANTHROPIC_CALLS:
        return "anthropic"
    # The Anthropic pass-through (/anthropic/v1/messages) gives the body as sent.
    if call_type == PASS_THROUGH and "max_tokens" in data:
        return "anthropic"
    return None


class ContextCompactorHook(CustomLogger):
    """LiteLLM `CustomLogger` whose pre-call hook compacts the history (module docs)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        client: AsyncCompactorClient | None = None,
    ) -> None:
        super().__init__()
        self._base_url = base_url
        self._api_key = api_key
        self._client = client

    @property
    def client(self) -> AsyncCompactorClient:
        """The service's client, made on first use (LiteLLM imports callbacks at start)."""
        if self._client is None:
            url = self._base_url or os.environ.get("COMPACTOR_URL")
            if not url:
                raise RuntimeError(
                    "context_compactor.integrations.litellm: set COMPACTOR_URL to the "
                    "context-compactor service's base URL"
                )
            key = self._api_key or os.environ.get("COMPACTOR_KEY") or None
            self._client = AsyncCompactorClient(url, key)
        return self._client

    async def async_pre_call_hook(
        self,
        user_api_key_dict: Any,
        cache: Any,
        data: dict[str, Any],
        call_type: Any,
    ) -> dict[str, Any]:
        """The request with its history compacted when the service says so."""
        wire = _wire_format(data, str(call_type))
        if wire is None:
            return data
        session = _session_of(data)
        options = _request_options(data)
        data = _without_own_fields(data)
        try:
            if session is not None:
                return await self._bound(data, wire, session)
            return await self._stateless(data, wire, options)
        except CompactorAPIError as exc:
            # Fail open: the model may still take the history; compaction is an aid.
            log.warning("context-compactor unavailable, request sent as it came: %s", exc)
            return data

    async def _stateless(
        self, data: dict[str, Any], wire: str, given: Mapping[str, Any]
    ) -> dict[str, Any]:
        options: dict[str, Any] = {"format": wire, **given}
        if isinstance(data.get("model"), str):
            options["model"] = data["model"]
        if wire == "anthropic" and data.get("system") is not None:
            options["system"] = data["system"]
        if isinstance(data.get("tools"), list):
            options["tools"] = data["tools"]
        result = await self.client.compact(data["messages"], **options)
        if not result.compacted:
            return data
        log.info(
            "context-compactor compacted the history: %d → %d tokens",
            result.tokens_before,
            result.tokens_after,
        )
        return {**data, "messages": result.messages}

    async def _bound(self, data: dict[str, Any], wire: str, session: str) -> dict[str, Any]:
        """Appends what the session does not have yet, prepares, sends its context."""
        messages: list[Any] = data["messages"]
        stored = await self.client.transcript(session, limit=1)
        # The caller resends its whole history: what lies past the stored transcript is new.
        new = messages[stored.total :]
        if new:
            await self.client.append_messages(session, new)
        prepared = await self.client.prepare(session)
        context = prepared.context
        out = {**data, "messages": context.messages}
        if wire == "anthropic" and context.system:
            out["system"] = context.system
        return out


handler = ContextCompactorHook()
