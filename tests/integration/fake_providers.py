"""Fake LLM providers: real HTTP servers on 127.0.0.1, one per wire format, that answer
from a script and record every request they receive."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.integration.loopback_server import LoopbackServer

DEFAULT_SUMMARY = """## Goal
- Finish the task the user asked for

## Constraints & Preferences
- (none)

## Progress
### Done
- [x] Read the code
### In Progress
- [ ] Fix the bug
### Blocked
- (none)

## Key Decisions
- **Keep the API**: callers depend on it

## Next Steps
1. Run the tests

## Critical Context
- (none)"""

# How long a slow reply holds the connection if nobody hangs up (a safety net only).
_HOLD_LIMIT_SECONDS = 30.0


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a summary (`ok`, `truncated`), a bare status, raw bytes, or a
    `slow` reply that never answers and waits for the client to hang up."""

    kind: str
    text: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    usage: tuple[int, int] = (1200, 300)

    @staticmethod
    def ok(text: str = DEFAULT_SUMMARY, usage: tuple[int, int] = (1200, 300)) -> Reply:
        return Reply("ok", text=text, usage=usage)

    @staticmethod
    def truncated(text: str = "## Goal\n- PARTIAL-SUMMARY-CUT-OFF") -> Reply:
        return Reply("truncated", text=text)

    @staticmethod
    def empty() -> Reply:
        return Reply("ok", text="")

    @staticmethod
    def status_only(status: int, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
        payload = json.dumps(body).encode() if body is not None else b""
        return Reply("raw", status=status, headers=headers or {}, body=payload)

    @staticmethod
    def raw(body: bytes, status: int = 200) -> Reply:
        return Reply("raw", status=status, body=body)

    @staticmethod
    def slow() -> Reply:
        return Reply("slow")

    @staticmethod
    def held(text: str = DEFAULT_SUMMARY) -> Reply:
        """A summary that is answered only once the test sets the fake's `release`: a
        slow summarizer whose slowness the test decides, not a clock."""
        return Reply("held", text=text)


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: Any


class FakeProvider(LoopbackServer):
    """A loopback HTTP server that pops one scripted reply per request (the default
    summary when the script is empty)."""

    wire = ""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.client_hung_up = threading.Event()
        self.request_arrived = threading.Event()
        # Held replies (`Reply.held`) answer once this is set (the test releases them).
        self.release = threading.Event()
        # Every reply waits this long first (a model that takes its time to summarize).
        self.delay_seconds = 0.0
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        super().__init__(_handler_for(self))

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def _take(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode(errors="replace")
        with self._lock:
            self.received.append(Received(path, headers, body))
            reply = self._script.popleft() if self._script else Reply.ok()
        self.request_arrived.set()
        return reply

    def _hold(self, connection: socket.socket) -> None:
        """Keeps the request open until the client closes its end."""
        end = time.monotonic() + _HOLD_LIMIT_SECONDS
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

    def render(self, reply: Reply) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body of a scripted reply in this fake's wire format."""
        if reply.kind == "raw":
            return reply.status, {"content-type": "application/json", **reply.headers}, reply.body
        body = self.completion(reply.text, reply.kind == "truncated", reply.usage)
        return 200, {"content-type": "application/json"}, json.dumps(body).encode()

    def completion(self, text: str, truncated: bool, usage: tuple[int, int]) -> dict[str, Any]:
        raise NotImplementedError


class OpenAIFake(FakeProvider):
    """Chat Completions: `POST /chat/completions` (base URL is the server root)."""

    wire = "openai"

    def completion(self, text: str, truncated: bool, usage: tuple[int, int]) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "finish_reason": "length" if truncated else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": sum(usage),
            },
        }


class AnthropicFake(FakeProvider):
    """Messages API: `POST /v1/messages`; answers carry a thinking block before the text."""

    wire = "anthropic"

    def completion(self, text: str, truncated: bool, usage: tuple[int, int]) -> dict[str, Any]:
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": "fake",
            "content": [
                {"type": "thinking", "thinking": "NOT-PART-OF-THE-SUMMARY", "signature": "sig"},
                {"type": "text", "text": text},
            ],
            "stop_reason": "max_tokens" if truncated else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }


def _handler_for(fake: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def handle(self) -> None:
            self.took_request = False
            super().handle()
            if not self.took_request:
                # The client closed the connection before its request was complete: on a
                # loaded machine a short deadline can pass while connecting or sending,
                # and that is the call dropped as surely as a hang-up during the reply.
                fake.client_hung_up.set()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            if len(raw) < length:
                return  # cut off mid-body: `handle` records the hang-up
            self.took_request = True
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = fake._take(self.path, headers, raw)
            self.close_connection = True
            if fake.delay_seconds:
                time.sleep(fake.delay_seconds)
            if reply.kind == "slow":
                fake._hold(self.connection)
                return
            if reply.kind == "held":
                fake.release.wait(_HOLD_LIMIT_SECONDS)
                reply = Reply.ok(reply.text)
            status, reply_headers, body = fake.render(reply)
            self.send_response(status)
            for name, value in reply_headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
