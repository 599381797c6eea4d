"""Fake model APIs for the proxy: one real HTTP server on 127.0.0.1 that speaks OpenAI
Chat Completions and Responses (under /v1), Anthropic Messages and Gemini generateContent
(under /v1beta), whole or streamed as server-sent events, and records what it received.

Streams can be paced for timing-free tests: `gate_last` holds the last event until the
test calls `release` (so "the first event arrived before the last was sent" is a fact,
not a measurement), and `hold_after` stops after some events and waits for the client
to hang up (so a test can see the proxy cancel the upstream request).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.integration.loopback_server import LoopbackServer

_WAIT_LIMIT_SECONDS = 20.0


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    # The body's bytes as they arrived (a multipart upload, a binary file).
    raw: bytes = b""


@dataclass(frozen=True)
class Answer:
    """A scripted answer: JSON (`json`) or server-sent events (`events`)."""

    status: int = 200
    json: Any = None
    events: list[tuple[str | None, Any]] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    gate_last: bool = False
    hold_after: int | None = None
    pause_seconds: float = 0.0
    # Send nothing at all; wait for the client to hang up (a model still thinking).
    hold_before_headers: bool = False
    # Bytes to send instead of `json` (e.g. a gzip-compressed body).
    raw_body: bytes | None = None


def context_too_long_openai() -> Answer:
    return Answer(
        400,
        {
            "error": {
                "message": "This model's maximum context length is 8192 tokens.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    )


def context_too_long_anthropic() -> Answer:
    return Answer(
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 250000 tokens > 200000 maximum",
            },
        },
    )


def prompt_size(body: Any) -> int:
    """A plausible input token count for a usage report (a quarter of the JSON's length):
    sessions anchor their estimates on the usage the upstream reports."""
    return len(json.dumps(body)) // 4 if isinstance(body, dict) else 1


def text_of(body: Any) -> str:
    """The reply text the fake writes: names how many history items it was sent."""
    history = (
        body.get("messages", body.get("input", body.get("contents", [])))
        if isinstance(body, dict)
        else []
    )
    count = len(history) if isinstance(history, list) else 1
    return f"Reply to {count} items."


# -- whole answers ---------------------------------------------------------------------


def chat_completion(text: str, prompt_tokens: int = 100) -> dict[str, Any]:
    return {
        "id": "chatcmpl-up",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 7,
            "total_tokens": prompt_tokens + 7,
        },
    }


def anthropic_message(text: str, input_tokens: int = 100) -> dict[str, Any]:
    return {
        "id": "msg_up",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 7},
    }


def response_object(
    text: str, status: str = "completed", input_tokens: int = 100
) -> dict[str, Any]:
    return {
        "id": "resp_up",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": "gpt-5",
        "output": [
            {
                "type": "message",
                "id": "msg_up",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ]
        if status == "completed"
        else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": 7,
            "total_tokens": input_tokens + 7,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def gemini_response(
    text: str,
    prompt_tokens: int = 100,
    parts: list[dict[str, Any]] | None = None,
    finish: str | None = "STOP",
) -> dict[str, Any]:
    """A GenerateContentResponse: one candidate, its parts (one text part by default)."""
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": parts if parts is not None else [{"text": text}]},
        "index": 0,
    }
    if finish is not None:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": 7,
            "totalTokenCount": prompt_tokens + 7,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-up",
    }


def context_too_long_gemini() -> Answer:
    return Answer(
        400,
        {
            "error": {
                "code": 400,
                "message": "The input token count (1200000) exceeds the maximum number of "
                "tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            }
        },
    )


# -- streams ---------------------------------------------------------------------------


def gemini_events(
    words: list[str], parts: list[dict[str, Any]] | None = None
) -> list[tuple[str | None, Any]]:
    """`streamGenerateContent?alt=sse`: one partial response per word (then any extra
    `parts`), the last with finishReason and usage."""
    events: list[tuple[str | None, Any]] = [(None, gemini_response(w, finish=None)) for w in words]
    if parts:
        events += [(None, gemini_response("", parts=[p], finish=None)) for p in parts]
    last = gemini_response("", parts=[{"text": ""}], prompt_tokens=100)
    events.append((None, last))
    return events


def chat_events(words: list[str]) -> list[tuple[str | None, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[str | None, Any]:
        return None, {
            "id": "chatcmpl-up",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "gpt-4",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": w}) for w in words]
    events.append(chunk({}, "stop"))
    events.append((None, "[DONE]"))
    return events


def anthropic_events(words: list[str]) -> list[tuple[str | None, Any]]:
    start = {**anthropic_message(""), "content": [], "stop_reason": None}
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    events += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}},
        )
        for w in words
    ]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": len(words)},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def responses_events(words: list[str]) -> list[tuple[str | None, Any]]:
    text = "".join(words)
    created = response_object("", status="in_progress")
    item = {"type": "message", "id": "msg_up", "status": "in_progress", "role": "assistant"}
    payloads: list[dict[str, Any]] = [
        {"type": "response.created", "response": created},
        {"type": "response.in_progress", "response": created},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {
            "type": "response.content_part.added",
            "item_id": "msg_up",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
    ]
    payloads += [
        {
            "type": "response.output_text.delta",
            "item_id": "msg_up",
            "output_index": 0,
            "content_index": 0,
            "delta": w,
            "logprobs": [],
        }
        for w in words
    ]
    done_part = {"type": "output_text", "text": text, "annotations": []}
    payloads += [
        {
            "type": "response.output_text.done",
            "item_id": "msg_up",
            "output_index": 0,
            "content_index": 0,
            "text": text,
            "logprobs": [],
        },
        {
            "type": "response.content_part.done",
            "item_id": "msg_up",
            "output_index": 0,
            "content_index": 0,
            "part": done_part,
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "status": "completed", "content": [done_part]},
        },
        {"type": "response.completed", "response": response_object(text)},
    ]
    return [(p["type"], {**p, "sequence_number": i}) for i, p in enumerate(payloads)]


def default_answer(received: Received, words: list[str]) -> Answer:
    """A well-formed answer of the API the path names, streamed when asked."""
    body = received.body if isinstance(received.body, dict) else {}
    streamed = body.get("stream") is True
    text = text_of(body)
    path = received.path.split("?", 1)[0]
    if received.method == "GET":
        return Answer(json={"object": "list", "data": [{"id": "gpt-4", "object": "model"}]})
    if path.endswith("/chat/completions"):
        return (
            Answer(events=chat_events([text, *words]))
            if streamed
            else Answer(json=chat_completion(text, prompt_size(body)))
        )
    if path.endswith("/messages"):
        return (
            Answer(events=anthropic_events([text, *words]))
            if streamed
            else Answer(json=anthropic_message(text, prompt_size(body)))
        )
    if path.endswith("/responses"):
        return (
            Answer(events=responses_events([text, *words]))
            if streamed
            else Answer(json=response_object(text, input_tokens=prompt_size(body)))
        )
    if path.endswith(":generateContent"):
        return Answer(json=gemini_response(text, prompt_size(body)))
    if path.endswith(":streamGenerateContent"):
        return Answer(events=gemini_events([text, *words]))
    return Answer(404, {"error": {"message": f"no route {path}", "type": "not_found"}})


class FakeUpstream(LoopbackServer):
    """A loopback HTTP server answering from a script, then with `default_answer`."""

    def __init__(self, words: list[str] | None = None) -> None:
        self.received: list[Received] = []
        self.words = words if words is not None else [" one", " two", " three"]
        self.release = threading.Event()
        self.sent_last = threading.Event()
        self.client_hung_up = threading.Event()
        self.responder: Callable[[Received], Answer | None] | None = None
        self._script: deque[Answer] = deque()
        self._lock = threading.Lock()
        super().__init__(_handler_for(self))

    def script(self, *answers: Answer) -> None:
        with self._lock:
            self._script.extend(answers)

    def bodies(self, path_suffix: str = "") -> list[Any]:
        return [r.body for r in self.received if r.path.split("?")[0].endswith(path_suffix)]

    def _releasing(self) -> None:
        self.release.set()

    def take(self, received: Received) -> Answer:
        with self._lock:
            self.received.append(received)
            if self._script:
                return self._script.popleft()
        answer = self.responder(received) if self.responder is not None else None
        return answer or default_answer(received, self.words)

    def hold(self, connection: socket.socket) -> None:
        """Waits until the client closes its end of the connection."""
        end = time.monotonic() + _WAIT_LIMIT_SECONDS
        while not self._stopping.is_set() and time.monotonic() < end:
            readable, _, _ = select.select([connection], [], [], 0.05)
            if not readable:
                continue
            try:
                data = connection.recv(1, socket.MSG_PEEK)
            except OSError:
                data = b""
            if not data:
                self.client_hung_up.set()
                return


def _sse(name: str | None, data: Any) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {text}\n\n".encode()


def _handler_for(fake: FakeUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _read_body(self) -> bytes:
            if "chunked" in self.headers.get("transfer-encoding", "").lower():
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
            length = int(self.headers.get("content-length") or 0)
            return self.rfile.read(length) if length else b""

        def _serve(self, method: str) -> None:
            raw = self._read_body()
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer = fake.take(Received(method, self.path, headers, body, raw))
            self.close_connection = True
            if answer.hold_before_headers:
                fake.hold(self.connection)
                return
            if answer.events is None:
                payload = (
                    answer.raw_body
                    if answer.raw_body is not None
                    else json.dumps(answer.json).encode()
                )
                self.send_response(answer.status)
                self.send_header("content-type", "application/json")
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            self.send_response(answer.status)
            self.send_header("content-type", "text/event-stream")
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            last = len(answer.events) - 1
            try:
                for index, (name, data) in enumerate(answer.events):
                    if answer.hold_after is not None and index == answer.hold_after:
                        fake.hold(self.connection)
                        return
                    if index == last and answer.gate_last:
                        fake.release.wait(_WAIT_LIMIT_SECONDS)
                    if index == last:
                        fake.sent_last.set()
                    self.wfile.write(_sse(name, data))
                    self.wfile.flush()
                    if answer.pause_seconds:
                        time.sleep(answer.pause_seconds)
            except (BrokenPipeError, ConnectionResetError):
                fake.client_hung_up.set()

        def do_POST(self) -> None:
            self._serve("POST")

        def do_GET(self) -> None:
            self._serve("GET")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def do_PATCH(self) -> None:
            self._serve("PATCH")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
