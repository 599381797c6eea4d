"""A local stand-in for an OpenAI-compatible Chat Completions server (standard library only).

It answers `POST /v1/chat/completions` like a small coding model would: it asks for tools
whose outputs are large (source files, test logs), reports `usage` on every answer, and
refuses a request longer than its context window with OpenAI's own error shape
(HTTP 400, `error.code = "context_length_exceeded"`). It counts tokens as
ceil(characters / 4) of the request's messages and tools, which is all a fake needs.

Run it alone:  python examples/fake_model.py --port 8081 --context-window 5000
It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_CONTEXT_WINDOW = 5_000
DEFAULT_STEPS = 12


def count_tokens(body: dict[str, Any]) -> int:
    """The fake's token count of a request: ceil(characters / 4) of messages and tools."""
    text = json.dumps([body.get("messages", []), body.get("tools", [])], ensure_ascii=False)
    return math.ceil(len(text) / 4)


class ScriptedModel:
    """Decides each reply: alternate reading files and running the tests, then finish."""

    def __init__(self, context_window: int, steps: int) -> None:
        self.context_window = context_window
        self.steps = steps
        self.completions = 0
        self.refusals = 0
        self._lock = threading.Lock()

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(status, JSON body) for one Chat Completions request."""
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, _error("messages must be a non-empty array", "invalid_request_error")
        prompt_tokens = count_tokens(body)
        with self._lock:
            if prompt_tokens > self.context_window:
                self.refusals += 1
                return 400, _error(
                    f"This model's maximum context length is {self.context_window} tokens. "
                    f"However, your messages resulted in {prompt_tokens} tokens. "
                    "Please reduce the length of the messages.",
                    "invalid_request_error",
                    code="context_length_exceeded",
                )
            step = self.completions
            self.completions += 1
        message = self._reply(step)
        completion_tokens = math.ceil(len(json.dumps(message)) / 4)
        return 200, {
            "id": f"chatcmpl-fake-{step}",
            "object": "chat.completion",
            "model": str(body.get("model") or "fake-coder"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _reply(self, step: int) -> dict[str, Any]:
        if step >= self.steps:
            return {
                "role": "assistant",
                "content": "The parser now handles empty input and the tests pass. Done.",
            }
        if step % 3 == 2:
            name, arguments = "run_tests", {"path": "tests/", "verbose": True}
            intent = "Let me run the test suite to see what still fails."
        else:
            module = f"src/parser/module_{step}.py"
            name, arguments = "read_file", {"path": module, "lines": 90 + 40 * (step % 2)}
            intent = f"I'll read {module} to find where empty input is handled."
        return {
            "role": "assistant",
            "content": intent,
            "tool_calls": [
                {
                    "id": f"call_{step}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            ],
        }


def _error(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": "messages", "code": code}}


class _Handler(BaseHTTPRequestHandler):
    server: _FakeHTTPServer

    def do_POST(self) -> None:
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send(404, _error(f"no route {self.path}", "not_found"))
            return
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            self._send(400, _error("the body is not JSON", "invalid_request_error"))
            return
        if not isinstance(body, dict):
            self._send(400, _error("the body must be a JSON object", "invalid_request_error"))
            return
        self._send(*self.server.model.answer(body))

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the agent loop prints what matters."""


class _FakeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, model: ScriptedModel) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.model = model


@contextmanager
def serve_fake_model(
    context_window: int = DEFAULT_CONTEXT_WINDOW, steps: int = DEFAULT_STEPS, port: int = 0
) -> Iterator[tuple[str, ScriptedModel]]:
    """The fake model on 127.0.0.1 in a thread; yields its base URL (…/v1) and its state."""
    model = ScriptedModel(context_window, steps)
    server = _FakeHTTPServer(port, model)
    thread = threading.Thread(target=server.serve_forever, name="fake-model", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", model
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--context-window", type=int, default=DEFAULT_CONTEXT_WINDOW)
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="tool calls, then done")
    args = parser.parse_args()
    model = ScriptedModel(args.context_window, args.steps)
    server = _FakeHTTPServer(args.port, model)
    print(f"fake model on http://127.0.0.1:{args.port}/v1 (window {args.context_window} tokens)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
