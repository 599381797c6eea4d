"""The model's reply in an upstream answer, as history messages of the request's format
(for a bound session's transcript): from a whole JSON body, or reassembled from the
server-sent events of a stream as they pass through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from app.formats.vendor.apis import CHAT_COMPLETIONS, MESSAGES, ProxyApi

_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


# The last event of an Anthropic or Responses stream (Chat Completions ends with [DONE]).
_FINAL_EVENTS = frozenset({"message_stop", "response.completed", "response.incomplete"})


@dataclass(frozen=True, slots=True)
class UpstreamReply:
    """The reply's messages and the usage report that belongs to the last of them."""

    messages: list[Any]
    usage: dict[str, int] | None


def usage_report(raw: Any) -> dict[str, int] | None:
    """A provider usage object → the session's usage fields (input, output, cache)."""
    if not isinstance(raw, dict):
        return None
    if "prompt_tokens" in raw:  # Chat Completions; cached tokens are part of the prompt
        raw = {
            "input_tokens": raw.get("prompt_tokens"),
            "output_tokens": raw.get("completion_tokens"),
        }
    report = {
        name: value
        for name in _USAGE_FIELDS
        if isinstance(value := raw.get(name), int) and not isinstance(value, bool) and value >= 0
    }
    return report or None


def _chat_message(message: dict[str, Any]) -> dict[str, Any]:
    # The SDKs send nulls for absent fields; the history keeps only what is there.
    return {k: v for k, v in message.items() if v is not None or k == "content"}


def reply_from_body(api: ProxyApi, content: bytes) -> UpstreamReply | None:
    """The reply in a non-streamed answer body; None when it holds none."""
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(body, dict):
        return None
    if api is CHAT_COMPLETIONS:
        choices = body.get("choices")
        if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
            return None
        message = choices[0].get("message")
        if not isinstance(message, dict):
            return None
        return UpstreamReply([_chat_message(message)], usage_report(body.get("usage")))
    if api is MESSAGES:
        blocks = body.get("content")
        if not isinstance(blocks, list):
            return None
        return UpstreamReply(
            [{"role": "assistant", "content": blocks}], usage_report(body.get("usage"))
        )
    output = body.get("output")
    if not isinstance(output, list) or not output:
        return None
    return UpstreamReply(list(output), usage_report(body.get("usage")))


class ReplyCapture:
    """Rebuilds the reply from a stream's events, fed chunk by chunk (never delaying them)."""

    def __init__(self, api: ProxyApi) -> None:
        self.api = api
        self._buffer = b""
        self._broken = False
        # Chat Completions
        self._chat: dict[str, Any] = {"role": "assistant", "content": None}
        self._chat_calls: dict[int, dict[str, Any]] = {}
        # Anthropic Messages
        self._blocks: dict[int, dict[str, Any]] = {}
        self._partial_json: dict[int, str] = {}
        # Both, and Responses (whose final event carries the whole reply)
        self._usage: dict[str, Any] = {}
        self._output: list[Any] | None = None
        self._seen = False
        self.finished = False

    def feed(self, chunk: bytes) -> bool:
        """Reads the events in `chunk`; True once the stream's final event has arrived."""
        if self._broken:
            return False
        self._buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in self._buffer:
            event, self._buffer = self._buffer.split(b"\n\n", 1)
            data = b"\n".join(
                line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")
            )
            if data == b"[DONE]":
                self.finished = True
            if not data or data == b"[DONE]":
                continue
            try:
                payload = orjson.loads(data)
            except orjson.JSONDecodeError:
                self._broken = True  # not a stream we understand: record nothing
                return False
            if isinstance(payload, dict):
                self._seen = True
                try:
                    self._event(payload)
                except (AttributeError, TypeError, KeyError, ValueError):
                    # An event of a shape we do not know (a string delta, a numeric name):
                    # stop recording, never the relay. The caller still gets every byte.
                    self._broken = True
                    return False
                if payload.get("type") in _FINAL_EVENTS:
                    self.finished = True
        return self.finished

    def _event(self, payload: dict[str, Any]) -> None:
        if self.api is CHAT_COMPLETIONS:
            self._chat_chunk(payload)
        elif self.api is MESSAGES:
            self._anthropic_event(payload)
        elif payload.get("type") in ("response.completed", "response.incomplete"):
            response = payload.get("response") or {}
            output = response.get("output")
            self._output = list(output) if isinstance(output, list) else None
            self._usage = response.get("usage") or {}

    def _chat_chunk(self, payload: dict[str, Any]) -> None:
        if isinstance(payload.get("usage"), dict):
            self._usage = payload["usage"]
        for choice in payload.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if isinstance(text, str):
                self._chat["content"] = (self._chat["content"] or "") + text
            refusal = delta.get("refusal")
            if isinstance(refusal, str):
                self._chat["refusal"] = self._chat.get("refusal", "") + refusal
            for call in delta.get("tool_calls") or []:
                slot = self._chat_calls.setdefault(
                    call.get("index", 0),
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                if call.get("id"):
                    slot["id"] = call["id"]
                function = call.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""

    def _anthropic_event(self, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        index = payload.get("index", 0)
        if kind == "message_start":
            self._usage = dict((payload.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            self._blocks[index] = dict(payload.get("content_block") or {})
        elif kind == "content_block_delta":
            self._anthropic_delta(index, payload.get("delta") or {})
        elif kind == "content_block_stop" and index in self._partial_json:
            text = self._partial_json.pop(index)
            try:
                self._blocks[index]["input"] = orjson.loads(text) if text else {}
            except orjson.JSONDecodeError:
                self._blocks[index]["input"] = {}
        elif kind == "message_delta":
            self._usage.update(payload.get("usage") or {})

    def _anthropic_delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self._blocks.setdefault(index, {})
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
        elif kind == "input_json_delta":
            self._partial_json[index] = self._partial_json.get(index, "") + delta.get(
                "partial_json", ""
            )
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta.get("signature", "")
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))

    def reply(self) -> UpstreamReply | None:
        """The reassembled reply, once the stream ended; None when there was none."""
        if self._broken or not self._seen:
            return None
        usage = usage_report(self._usage)
        if self.api is CHAT_COMPLETIONS:
            message = dict(self._chat)
            if self._chat_calls:
                message["tool_calls"] = [self._chat_calls[i] for i in sorted(self._chat_calls)]
            if message["content"] is None and "tool_calls" not in message:
                return None
            return UpstreamReply([message], usage)
        if self.api is MESSAGES:
            if not self._blocks:
                return None
            blocks = [self._blocks[i] for i in sorted(self._blocks)]
            return UpstreamReply([{"role": "assistant", "content": blocks}], usage)
        if not self._output:
            return None
        return UpstreamReply(self._output, usage)
