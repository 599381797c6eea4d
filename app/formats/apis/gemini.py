"""The Gemini API (`POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent`,
and the same under /v1 and /v1alpha) as the proxy speaks it, and `:countTokens` answered
locally (SPEC §19).

The model is named in the path, the history is `contents`, the system prompt
`systemInstruction`, the output budget `generationConfig.maxOutputTokens`. A reply is a
`GenerateContentResponse`: `candidates[0].content` is the model's message, `usageMetadata`
its usage. Streamed with `alt=sse`, each event is a partial response; the event whose
candidate has a `finishReason` ends it. Shapes are the `google-genai` SDK's types
(`Content`, `Part`, `GenerateContentResponse`, `CountTokensResponse`). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

import orjson

from app.engine.errors import InvalidHistoryError
from app.formats.apis.json_api import JsonApi
from app.formats.apis.overflow import OVERFLOW_CODES, OVERFLOW_MESSAGES, is_context_overflow
from app.formats.apis.protocol import (
    NO_PARAMS,
    RequestEnvelope,
    Upstream,
    UpstreamReply,
    usage_report,
)
from app.formats.apis.sse import EventCapture
from app.formats.common import type_name

# The SDK's default API version is v1 (google-genai 3.x), v1beta and v1alpha by choice;
# a request is forwarded to the version it named.
_MODEL_ROUTE = "/{api_version}/models/{model}"
API_VERSIONS = ("v1beta", "v1", "v1alpha")
# Gemini says it in an INVALID_ARGUMENT message: "The input token count (…) exceeds the
# maximum number of tokens allowed (…)".
_OVERFLOW_MESSAGES = (*OVERFLOW_MESSAGES, "exceeds the maximum number of tokens")
_TEXT_MERGE_BLOCKERS = frozenset({"thoughtSignature", "functionCall", "functionResponse"})


def gemini_usage(raw: Any) -> dict[str, int] | None:
    """`usageMetadata` → the session's usage fields. `promptTokenCount` includes the
    cached part; the model's thoughts are output it was billed for."""
    if not isinstance(raw, dict):
        return None

    def number(name: str) -> int:
        value = raw.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    cached = number("cachedContentTokenCount")
    return usage_report(
        {
            "input_tokens": max(0, number("promptTokenCount") - cached),
            "output_tokens": number("candidatesTokenCount") + number("thoughtsTokenCount"),
            "cache_read_input_tokens": cached,
        }
    )


def _first_content(response: Any) -> dict[str, Any] | None:
    candidates = response.get("candidates") if isinstance(response, dict) else None
    if not isinstance(candidates, list) or not candidates:
        return None
    first = candidates[0]
    content = first.get("content") if isinstance(first, dict) else None
    return content if isinstance(content, dict) else None


def _finished(response: Any) -> bool:
    candidates = response.get("candidates") if isinstance(response, dict) else None
    return isinstance(candidates, list) and any(
        isinstance(c, dict) and c.get("finishReason") for c in candidates
    )


def _mergeable(part: Any) -> bool:
    return (
        isinstance(part, dict)
        and isinstance(part.get("text"), str)
        and not (_TEXT_MERGE_BLOCKERS & set(part))
    )


class ContentAssembly:
    """A model message rebuilt from the partial contents of a stream: consecutive text
    deltas of the same kind (thought or not) joined, every other part kept as it came, a
    signature kept on the part it arrived with."""

    def __init__(self) -> None:
        self.parts: list[dict[str, Any]] = []
        self.role = "model"

    def add(self, content: Mapping[str, Any]) -> None:
        if isinstance(content.get("role"), str):
            self.role = content["role"]
        for part in content.get("parts") or []:
            if not isinstance(part, dict):
                continue
            last = self.parts[-1] if self.parts else None
            same_kind = last is not None and last.get("thought") == part.get("thought")
            if (
                last is not None
                and same_kind
                and _mergeable(last)
                and isinstance(part.get("text"), str)
            ):
                merged = {**last, **part, "text": last["text"] + part["text"]}
                self.parts[-1] = merged
            else:
                self.parts.append(dict(part))

    def message(self) -> dict[str, Any] | None:
        return {"role": self.role, "parts": self.parts} if self.parts else None


class GeminiCapture(EventCapture):
    """A streamed Gemini answer (`alt=sse`): partial responses joined into one message."""

    def __init__(self) -> None:
        super().__init__()
        self._content = ContentAssembly()
        self._usage: Any = None

    def _is_final(self, payload: dict[str, Any]) -> bool:
        return _finished(payload)

    def _event(self, payload: dict[str, Any]) -> None:
        content = _first_content(payload)
        if content is not None:
            self._content.add(content)
        if isinstance(payload.get("usageMetadata"), dict):
            self._usage = payload["usageMetadata"]

    def reply(self) -> UpstreamReply | None:
        message = self._content.message()
        if not self.usable or message is None:
            return None
        return UpstreamReply([message], gemini_usage(self._usage))


class GeminiCountTokens:
    """`POST /v1beta/models/{model}:countTokens`: `{contents}` or
    `{generateContentRequest}` in, `{totalTokens}` out (CountTokensResponse)."""

    route = _MODEL_ROUTE + ":countTokens"
    description = (
        "Gemini countTokens, answered locally: o200k as an approximation (no Gemini "
        "tokenizer ships offline), images by Gemini's published tile rule."
    )

    def as_request(self, body: Mapping[str, Any]) -> dict[str, Any]:
        wrapped = body.get("generateContentRequest")
        if wrapped is None:
            return dict(body)
        if not isinstance(wrapped, dict):
            raise InvalidHistoryError(
                f"generateContentRequest: must be an object, got {type_name(wrapped)}",
                where="generateContentRequest",
            )
        return wrapped

    def answer(self, tokens: int) -> dict[str, Any]:
        return {"totalTokens": tokens}


class GeminiApi(JsonApi):
    """Gemini `generateContent`: history in `contents`, `systemInstruction` on top."""

    name = "gemini"
    upstream = Upstream.GEMINI
    format = "gemini"
    route = _MODEL_ROUTE + ":generateContent"
    description = "Gemini generateContent, forwarded; `contents` compacted when over the threshold."
    method = "generateContent"
    history_field = "contents"
    system_field = "systemInstruction"
    streamed = False
    path_choices = MappingProxyType({"api_version": API_VERSIONS})

    def __init__(self, *, local_count: GeminiCountTokens | None = None) -> None:
        self.local_count = local_count

    def upstream_path(self, params: Mapping[str, str]) -> str:
        version = params.get("api_version", "v1beta")
        return f"/{version}/models/{quote(params.get('model', ''), safe='')}:{self.method}"

    def _system(self, body: Mapping[str, Any]) -> Any:
        value = body.get("systemInstruction")
        return value if isinstance(value, str | list | dict) else None

    def _model(self, body: Mapping[str, Any], params: Mapping[str, str]) -> str | None:
        model = params.get("model") or body.get("model")
        if not isinstance(model, str) or not model:
            return None
        return model.removeprefix("models/")

    def _budget(self, body: Mapping[str, Any]) -> int:
        config = body.get("generationConfig")
        value = config.get("maxOutputTokens") if isinstance(config, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def envelope(
        self, body: Mapping[str, Any], params: Mapping[str, str] = NO_PARAMS
    ) -> RequestEnvelope:
        tools = body.get("tools")
        return RequestEnvelope(
            history=self._history(body.get(self.history_field)),
            system=self._system(body),
            tools=tuple(tools) if isinstance(tools, list) else None,
            model=self._model(body, params),
            output_budget=self._budget(body),
            streamed=self.streamed,
        )

    def checked_envelope(
        self, body: Mapping[str, Any], params: Mapping[str, str] = NO_PARAMS
    ) -> RequestEnvelope:
        contents = body.get(self.history_field, [])
        if not isinstance(contents, list):
            raise InvalidHistoryError(
                "contents: must be an array of contents", where=self.history_field
            )
        tools = body.get("tools")
        if tools is not None and not isinstance(tools, list):
            raise InvalidHistoryError("tools: must be an array of tools", where="tools")
        return RequestEnvelope(
            history=contents,
            system=body.get("systemInstruction"),
            tools=tuple(tools) if tools is not None else None,
            model=self._model(body, params),
            output_budget=self._budget(body),
            streamed=self.streamed,
        )

    def reply_from_body(self, content: bytes) -> UpstreamReply | None:
        try:
            body = orjson.loads(content)
        except orjson.JSONDecodeError:
            return None
        # Streamed without alt=sse, the answer is a JSON array of partial responses.
        chunks = body if isinstance(body, list) else [body]
        assembly = ContentAssembly()
        usage: Any = None
        for chunk in chunks:
            found = _first_content(chunk)
            if found is not None:
                assembly.add(found)
            if isinstance(chunk, dict) and isinstance(chunk.get("usageMetadata"), dict):
                usage = chunk["usageMetadata"]
        message = assembly.message()
        if message is None:
            return None
        return UpstreamReply([message], gemini_usage(usage))

    def stream_capture(self) -> GeminiCapture:
        return GeminiCapture()

    def is_overflow(self, status: int, content: bytes) -> bool:
        return is_context_overflow(status, content, OVERFLOW_CODES, _OVERFLOW_MESSAGES)


class GeminiStreamApi(GeminiApi):
    """Gemini `streamGenerateContent` (server-sent events with `alt=sse`)."""

    name = "gemini_stream"
    route = _MODEL_ROUTE + ":streamGenerateContent"
    description = (
        "Gemini streamGenerateContent (alt=sse), relayed event by event; `contents` "
        "compacted when over the threshold."
    )
    method = "streamGenerateContent"
    streamed = True


GEMINI = GeminiApi(local_count=GeminiCountTokens())
GEMINI_STREAM = GeminiStreamApi()
