"""What the JSON model APIs share: a request body whose history, system prompt and
output budget sit in named fields, a reply in a JSON body or an event stream, and the
context-overflow signature (SPEC §10). Each API module subclasses `JsonApi` and names its
fields; what differs beyond that (the reply's shape, a stream's events) it writes itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

import orjson

from app.engine.errors import InvalidHistoryError
from app.formats.apis.overflow import OVERFLOW_CODES, OVERFLOW_MESSAGES, is_context_overflow
from app.formats.apis.protocol import (
    NO_PARAMS,
    ContextManagementWire,
    LocalCount,
    ReplyStream,
    RequestEnvelope,
    Upstream,
    UpstreamReply,
    checked_envelope_of,
    envelope_of,
)

NO_CHOICES: Mapping[str, tuple[str, ...]] = MappingProxyType({})


class JsonApi:
    """A JSON model API, described by its fields (the VendorApi protocol's shared half)."""

    name: ClassVar[str]
    upstream: ClassVar[Upstream]
    format: ClassVar[str]
    route: ClassVar[str]
    description: ClassVar[str]
    # Where the upstream expects the request, under its configured base URL.
    path: ClassVar[str]
    history_field: ClassVar[str] = "messages"
    # The top-level system prompt field (None: it is inline in the history).
    system_field: ClassVar[str | None] = None
    budget_fields: ClassVar[tuple[str, ...]] = ()
    # Request fields besides `tools` that the format reads when it counts the tools.
    tool_fields: ClassVar[tuple[str, ...]] = ()
    # Fields that name history the upstream stores (a bound session stands for them).
    state_fields: ClassVar[tuple[str, ...]] = ()
    context_management: ContextManagementWire | None = None
    local_count: LocalCount | None = None
    path_choices: Mapping[str, tuple[str, ...]] = NO_CHOICES

    def upstream_path(self, params: Mapping[str, str]) -> str:
        return self.path

    def _history(self, value: Any) -> list[Any] | None:
        """The history field's value as a list to work on (None: nothing to work on)."""
        return value if isinstance(value, list) and value else None

    def _checked_history(self, value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise InvalidHistoryError(
                f"{self.history_field}: must be an array of messages", where=self.history_field
            )
        return value

    def _system(self, body: Mapping[str, Any]) -> Any:
        if self.system_field is None:
            return None
        value = body.get(self.system_field)
        return value if isinstance(value, str | list) else None

    def envelope(
        self, body: Mapping[str, Any], params: Mapping[str, str] = NO_PARAMS
    ) -> RequestEnvelope:
        history = self._history(body.get(self.history_field))
        return envelope_of(body, history, self._system(body), self.budget_fields, self.tool_fields)

    def checked_envelope(
        self, body: Mapping[str, Any], params: Mapping[str, str] = NO_PARAMS
    ) -> RequestEnvelope:
        history = self._checked_history(body.get(self.history_field))
        system = body.get(self.system_field) if self.system_field is not None else None
        return checked_envelope_of(body, history, system, self.budget_fields, self.tool_fields)

    def with_history(self, body: Mapping[str, Any], history: Sequence[Any]) -> dict[str, Any]:
        return {**body, self.history_field: list(history)}

    def with_system(self, body: Mapping[str, Any], system: Any) -> dict[str, Any]:
        if self.system_field is None:
            return dict(body)  # the system prompt is the history's leading messages
        return {**body, self.system_field: system}

    def server_state_fields(self, body: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(name for name in self.state_fields if body.get(name) is not None)

    def without_server_state(self, body: dict[str, Any]) -> dict[str, Any]:
        if not any(name in body for name in self.state_fields):
            return body
        return {k: v for k, v in body.items() if k not in self.state_fields}

    def reply_from_body(self, content: bytes) -> UpstreamReply | None:
        try:
            body = orjson.loads(content)
        except orjson.JSONDecodeError:
            return None
        return self._reply(body) if isinstance(body, dict) else None

    def _reply(self, body: dict[str, Any]) -> UpstreamReply | None:
        """The reply in a whole answer body (a JSON object)."""
        raise NotImplementedError

    def stream_capture(self) -> ReplyStream:
        raise NotImplementedError

    def is_overflow(self, status: int, content: bytes) -> bool:
        return is_context_overflow(status, content, OVERFLOW_CODES, OVERFLOW_MESSAGES)
