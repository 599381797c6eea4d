"""The model APIs the proxy speaks (SPEC §10): where each keeps its history, system
prompt and output budget, and which upstream and wire format it belongs to."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Upstream(StrEnum):
    OPENAI = "openai"
    ANTHROPIC = "anthropic"


@dataclass(frozen=True, slots=True)
class ProxyApi:
    """One proxied endpoint."""

    name: str
    upstream: Upstream
    # Path appended to the upstream's configured base URL.
    path: str
    # The wire format of its history (a name in the format registry).
    format: str
    history_field: str
    # The top-level system prompt field, if the API has one (it is never rewritten).
    system_field: str | None
    # Output budget fields: the larger of them raises the reserve.
    output_fields: tuple[str, ...]
    # Fields that name history the upstream stores (Responses `previous_response_id`,
    # `conversation`): a request bound to a session forwards the session's context instead.
    server_state_fields: tuple[str, ...] = ()
    # The history may be sent as plain text (Responses `input`): one user message.
    text_history_is_user_message: bool = False

    def history(self, body: dict[str, Any]) -> list[Any] | None:
        """The request's history, when it is a list the proxy can work on (plain text,
        where the API allows it, as one user message)."""
        value = body.get(self.history_field)
        if self.text_history_is_user_message and isinstance(value, str) and value:
            return [{"role": "user", "content": value}]
        return value if isinstance(value, list) and value else None

    def without_server_state(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` without the fields that name upstream-stored history."""
        if not any(name in body for name in self.server_state_fields):
            return body
        return {k: v for k, v in body.items() if k not in self.server_state_fields}

    def system(self, body: dict[str, Any]) -> Any:
        if self.system_field is None:
            return None
        value = body.get(self.system_field)
        return value if isinstance(value, str | list) else None

    def output_budget(self, body: dict[str, Any]) -> int:
        values = [body.get(name) for name in self.output_fields]
        return max((v for v in values if isinstance(v, int) and not isinstance(v, bool)), default=0)

    def with_history(self, body: dict[str, Any], history: list[Any]) -> dict[str, Any]:
        """`body` with its history replaced; every other field kept as received."""
        return {**body, self.history_field: history}


CHAT_COMPLETIONS = ProxyApi(
    name="chat_completions",
    upstream=Upstream.OPENAI,
    path="/chat/completions",
    format="openai",
    history_field="messages",
    system_field=None,
    output_fields=("max_tokens", "max_completion_tokens"),
)
MESSAGES = ProxyApi(
    name="messages",
    upstream=Upstream.ANTHROPIC,
    path="/v1/messages",
    format="anthropic",
    history_field="messages",
    system_field="system",
    output_fields=("max_tokens",),
)
RESPONSES = ProxyApi(
    name="responses",
    upstream=Upstream.OPENAI,
    path="/responses",
    format="responses",
    history_field="input",
    system_field="instructions",
    output_fields=("max_output_tokens",),
    server_state_fields=("previous_response_id", "conversation"),
    text_history_is_user_message=True,
)
