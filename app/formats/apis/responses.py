"""OpenAI Responses (`POST /v1/responses`) as the proxy speaks it, with its
`context_management` compaction and compaction items (SPEC §11)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from app.engine.native_edits import CompactionEntry
from app.formats.apis import responses_context as context
from app.formats.apis.json_api import JsonApi
from app.formats.apis.protocol import Upstream, UpstreamReply, usage_report
from app.formats.apis.responses_reports import (
    ResponsesStreamItemWriter,
    compaction_answer,
    item_in_reply,
)
from app.formats.apis.rewriting import rewrite_events, rewrite_json
from app.formats.apis.sse import EventCapture

# Fields that name history the upstream stores: a request bound to a session forwards the
# session's context instead.
SERVER_STATE_FIELDS = ("previous_response_id", "conversation")
_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete"})


class ResponsesCapture(EventCapture):
    """A streamed Responses answer: its final event carries the whole output."""

    def __init__(self) -> None:
        super().__init__()
        self._output: list[Any] | None = None
        self._usage: dict[str, Any] = {}

    def _is_final(self, payload: dict[str, Any]) -> bool:
        return payload.get("type") in _FINAL_EVENTS

    def _event(self, payload: dict[str, Any]) -> None:
        if payload.get("type") in _FINAL_EVENTS:
            response = payload.get("response") or {}
            output = response.get("output")
            self._output = list(output) if isinstance(output, list) else None
            self._usage = response.get("usage") or {}

    def reply(self) -> UpstreamReply | None:
        if not self.usable or not self._output:
            return None
        return UpstreamReply(self._output, usage_report(self._usage))


class ResponsesContextManagement:
    """Responses `context_management` and `compaction` items, on the wire."""

    def mentions(self, raw: bytes) -> bool:
        # All three markers are plain ASCII in every body the SDKs write.
        return b'"context_management"' in raw or b'"compaction' in raw

    def carries(self, body: Mapping[str, Any]) -> bool:
        items = body.get("input")
        return "context_management" in body or (
            isinstance(items, list)
            and (
                context.last_compaction_index(items) is not None
                or any(isinstance(i, dict) and i.get("type") == context.TRIGGER_ITEM for i in items)
            )
        )

    def with_capabilities(self, content: bytes) -> bytes:
        return content  # OpenAI's model objects carry no capability flags

    def compaction_trigger(self, body: Mapping[str, Any]) -> bool:
        """True when `input` ends with a `compaction_trigger` item (one elsewhere: 400)."""
        return context.compaction_trigger(context.input_items(body.get("input")))

    def without_trigger(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """`body` with its final `compaction_trigger` item removed."""
        return {**body, "input": context.input_items(body.get("input"))[:-1]}

    def compaction_answer(
        self, model: str | None, item: Mapping[str, Any], usage: Mapping[str, Any], streamed: bool
    ) -> list[bytes]:
        """The trigger's answer (a Response with the item as its output), whole or streamed."""
        return compaction_answer(model, item, usage, streamed)

    def self_managed(self, body: Mapping[str, Any]) -> bool:
        return "context_management" in body

    def compaction_entry(self, body: Mapping[str, Any]) -> CompactionEntry | None:
        return context.parse_context_management(body.get("context_management"))

    def input_items(self, body: Mapping[str, Any]) -> list[Any]:
        """`input` as a list of items (a string is one user message)."""
        return context.input_items(body.get("input"))

    def last_compaction_index(
        self, items: Sequence[Any], accept: Callable[[dict[str, Any]], bool]
    ) -> int | None:
        return context.last_compaction_index(items, accept)

    def is_compaction_item(self, item: Any) -> bool:
        return isinstance(item, dict) and item.get("type") == context.COMPACTION_ITEM

    def compaction_token(self, item: Mapping[str, Any]) -> str | None:
        """The item's `encrypted_content`, when it has one."""
        token = item.get("encrypted_content")
        return token if isinstance(token, str) and token else None

    def leading_system_items(self, items: Sequence[Any]) -> list[Any]:
        return context.leading_system_items(items)

    def compaction_item(self, item_id: str, encrypted_content: str) -> dict[str, Any]:
        return context.compaction_item(item_id, encrypted_content)

    def user_messages(self, items: Sequence[Any]) -> list[Any]:
        return context.user_messages(items)

    def usage(self, input_tokens: int, output_tokens: int) -> dict[str, Any]:
        return context.usage(input_tokens, output_tokens)

    def forwarded(self, body: Mapping[str, Any], items: Sequence[Any] | None) -> dict[str, Any]:
        """The request as the upstream gets it: no `context_management`, and `input`
        replaced when the items were rebuilt or compacted."""
        out = {k: v for k, v in body.items() if k != "context_management"}
        if items is not None:
            out["input"] = list(items)
        return out

    def server_state_fields(self, body: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(name for name in SERVER_STATE_FIELDS if body.get(name) is not None)

    def rewrite_whole(self, content: bytes, item: Mapping[str, Any]) -> bytes:
        return rewrite_json(content, lambda reply: item_in_reply(reply, item))

    def rewrite_stream(
        self, chunks: AsyncIterator[bytes], item: Mapping[str, Any]
    ) -> AsyncIterator[bytes]:
        return rewrite_events(chunks, ResponsesStreamItemWriter(item))


class ResponsesApi(JsonApi):
    """OpenAI Responses: history in `input` (plain text is one user message),
    `instructions` as the system prompt."""

    name = "responses"
    upstream = Upstream.OPENAI
    format = "responses"
    route = "/v1/responses"
    description = "OpenAI Responses, forwarded; `input` items compacted when over the threshold."
    path = "/responses"
    history_field = "input"
    system_field = "instructions"
    budget_fields = ("max_output_tokens",)
    tool_fields = ("tool_choice",)
    state_fields = SERVER_STATE_FIELDS
    context_management = ResponsesContextManagement()

    def _history(self, value: Any) -> list[Any] | None:
        if isinstance(value, str) and value:
            return [{"role": "user", "content": value}]
        return super()._history(value)

    def _checked_history(self, value: Any) -> list[Any]:
        return context.input_items(value)

    def _reply(self, body: dict[str, Any]) -> UpstreamReply | None:
        output = body.get("output")
        if not isinstance(output, list) or not output:
            return None
        return UpstreamReply(list(output), usage_report(body.get("usage")))

    def stream_capture(self) -> ResponsesCapture:
        return ResponsesCapture()


RESPONSES = ResponsesApi()
