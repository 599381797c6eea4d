"""OpenAI Chat Completions (`POST /v1/chat/completions`) as the proxy speaks it."""

from __future__ import annotations

from typing import Any

from app.formats.apis.json_api import JsonApi
from app.formats.apis.protocol import Upstream, UpstreamReply, usage_report
from app.formats.apis.sse import EventCapture


def _chat_message(message: dict[str, Any]) -> dict[str, Any]:
    # The SDKs send nulls for absent fields; the history keeps only what is there.
    return {k: v for k, v in message.items() if v is not None or k == "content"}


class ChatCompletionsCapture(EventCapture):
    """A streamed Chat Completions answer: deltas of choice 0 joined into one message."""

    done_sentinel = True

    def __init__(self) -> None:
        super().__init__()
        self._message: dict[str, Any] = {"role": "assistant", "content": None}
        self._calls: dict[int, dict[str, Any]] = {}
        self._usage: dict[str, Any] = {}
        self._finish_reason = False

    def _event(self, payload: dict[str, Any]) -> None:
        if isinstance(payload.get("usage"), dict):
            self._usage = payload["usage"]
        for choice in payload.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason"):
                self._finish_reason = True
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if isinstance(text, str):
                self._message["content"] = (self._message["content"] or "") + text
            refusal = delta.get("refusal")
            if isinstance(refusal, str):
                self._message["refusal"] = self._message.get("refusal", "") + refusal
            for call in delta.get("tool_calls") or []:
                slot = self._calls.setdefault(
                    call.get("index", 0),
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                if call.get("id"):
                    slot["id"] = call["id"]
                function = call.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""

    @property
    def finished(self) -> bool:
        # `[DONE]` ends the stream; an upstream that omits it but said why the model
        # stopped (finish_reason) finished the reply too.
        return super().finished or self._finish_reason

    def reply(self) -> UpstreamReply | None:
        if not (self._seen and not self._broken and self.finished):
            return None
        message = dict(self._message)
        if self._calls:
            message["tool_calls"] = [self._calls[i] for i in sorted(self._calls)]
        if message["content"] is None and "tool_calls" not in message:
            return None
        return UpstreamReply([message], usage_report(self._usage))


class ChatCompletionsApi(JsonApi):
    """OpenAI Chat Completions: history in `messages`, system prompt inline."""

    name = "chat_completions"
    upstream = Upstream.OPENAI
    format = "openai"
    route = "/v1/chat/completions"
    description = (
        "OpenAI Chat Completions, forwarded; the history compacted when over the threshold."
    )
    path = "/chat/completions"
    budget_fields = ("max_tokens", "max_completion_tokens")
    # Counted with the tools: the legacy `functions` list and the tool-choice settings.
    tool_fields = ("functions", "tool_choice", "function_call")

    def _reply(self, body: dict[str, Any]) -> UpstreamReply | None:
        choices = body.get("choices")
        if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
            return None
        message = choices[0].get("message")
        if not isinstance(message, dict):
            return None
        return UpstreamReply([_chat_message(message)], usage_report(body.get("usage")))

    def stream_capture(self) -> ChatCompletionsCapture:
        return ChatCompletionsCapture()


CHAT_COMPLETIONS = ChatCompletionsApi()
