"""The billing fake as a real HTTP server on 127.0.0.1.

Routes: `POST /v1/messages` (Anthropic; its base URL is the server root) and
`POST /v1/chat/completions`, `POST /v1/responses` (OpenAI; base URL `{root}/v1`, which
also serves an OpenAI-compatible summarizer). Whole answers or server-sent events
(`stream: true`). Every request is recorded (`received`) and billed (`bills`); a request
the vendor would refuse gets its status and error body, and a bill with that status.

What the model says comes from `reply` (a function of the request); the default is "ok".
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.billing import answers
from tests.billing.answers import Event, Reply
from tests.billing.anthropic_cache import AnthropicCache, prompt_blocks
from tests.billing.clock import SimulatedClock
from tests.billing.ledger import Bill, Totals
from tests.billing.openai_cache import (
    REPLY_PRIMING_TOKENS,
    OpenAICache,
    chat_segments,
    check_chat_tool_pairs,
    check_responses_tool_pairs,
    responses_segments,
)
from tests.billing.prices import ANTHROPIC, OPENAI, ModelPrice, price_of
from tests.billing.refusals import Refused, anthropic_refusal, openai_refusal
from tests.billing.tokens import count_text
from tests.integration.loopback_server import LoopbackServer


@dataclass(frozen=True, slots=True)
class Received:
    """One request as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    body: Any = None
    events: list[Event] | None = None


def _api_of(path: str) -> str | None:
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/v1/messages"):
        return "messages"
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    return None


class BillingUpstream(LoopbackServer):
    """A loopback model API that bills like the vendors; see the package docstring."""

    def __init__(
        self,
        clock: SimulatedClock | None = None,
        reply: Callable[[Received], Reply] | None = None,
        context_window: int | None = None,
    ) -> None:
        self.clock = clock or SimulatedClock()
        # Prompts longer than this are refused as the vendors refuse them (None: no limit).
        self.context_window = context_window
        self.reply = reply or (lambda received: Reply())
        self.received: list[Received] = []
        self.bills: list[Bill] = []
        self.anthropic = AnthropicCache()
        self.openai = OpenAICache()
        self._lock = threading.Lock()
        super().__init__(_handler_for(self))

    @property
    def openai_base_url(self) -> str:
        """The base URL an OpenAI client (or summarizer) is given."""
        return f"{self.base_url}/v1"

    def totals(self, since: int = 0) -> Totals:
        """Sums over the bills from index `since` on."""
        with self._lock:
            return Totals.of(self.bills[since:])

    def bodies(self, api: str | None = None) -> list[Any]:
        """What was received, optionally only one API's (`messages`, `chat`, `responses`)."""
        with self._lock:
            return [r.body for r in self.received if api is None or _api_of(r.path) == api]

    def answer(self, received: Received) -> _Answer:
        """Bills `received` and writes the answer the vendor would."""
        api = _api_of(received.path)
        with self._lock:
            self.received.append(received)
        if api is None:
            return _Answer(404, {"error": {"message": f"no route {received.path}"}})
        body = received.body
        try:
            if not isinstance(body, dict):
                raise (
                    anthropic_refusal(400, "invalid_request_error", "the body is not JSON")
                    if api == "messages"
                    else openai_refusal(400, "We could not parse the JSON body of your request.")
                )
            answer, bill = self._answer(api, received, body)
        except Refused as refused:
            model = str(body.get("model", "")) if isinstance(body, dict) else ""
            bill = Bill(api, model, refused.status, error=refused.message)
            answer = _Answer(refused.status, refused.body)
        with self._lock:
            self.bills.append(bill)
        return answer

    def _price(self, api: str, model: str) -> ModelPrice:
        price = price_of(ANTHROPIC if api == "messages" else OPENAI, model)
        if price is not None:
            return price
        if api == "messages":
            raise anthropic_refusal(404, "not_found_error", f"model: {model}")
        raise openai_refusal(
            404,
            f"The model `{model}` does not exist or you do not have access to it.",
            code="model_not_found",
        )

    def _refuse_overflow(self, api: str, body: dict[str, Any]) -> None:
        """Refuses a prompt over `context_window` with the vendor's own error."""
        window = self.context_window
        if window is None:
            return
        if api == "messages":
            tokens = sum(b.tokens for b in prompt_blocks(body))
            if tokens > window:
                raise anthropic_refusal(
                    400,
                    "invalid_request_error",
                    f"prompt is too long: {tokens} tokens > {window} maximum",
                )
            return
        segments = chat_segments(body) if api == "chat" else responses_segments(body)
        tokens = sum(s.tokens for s in segments) + REPLY_PRIMING_TOKENS
        if tokens > window:
            raise openai_refusal(
                400,
                f"This model's maximum context length is {window} tokens. However, your "
                f"messages resulted in {tokens} tokens. Please reduce the length of the messages.",
                param="messages",
                code="context_length_exceeded",
            )

    def _answer(self, api: str, received: Received, body: dict[str, Any]) -> tuple[_Answer, Bill]:
        model = str(body.get("model", ""))
        price = self._price(api, model)
        now = self.clock.now()
        streamed = body.get("stream") is True
        self._refuse_overflow(api, body)
        if api == "messages":
            usage_split = self.anthropic.bill(body, price, now)
            reply = self.reply(received)
            output = max(1, count_text(reply.rendering()))
            reported = usage_split.usage(output)
            bill = Bill(
                api,
                model,
                200,
                uncached=usage_split.uncached,
                read=usage_split.read,
                write_5m=usage_split.write_5m,
                write_1h=usage_split.write_1h,
                output=output,
                dollars=price.dollars(
                    usage_split.uncached,
                    usage_split.read,
                    usage_split.write_5m,
                    usage_split.write_1h,
                    output,
                ),
                breakpoints=usage_split.breakpoints,
                usage=reported,
            )
            if streamed:
                return _Answer(200, events=answers.anthropic_events(model, reply, reported)), bill
            return _Answer(200, answers.anthropic_message(model, reply, reported)), bill
        if api == "chat":
            segments = chat_segments(body)
            check_chat_tool_pairs(body["messages"])
        else:
            segments = responses_segments(body)
            check_responses_tool_pairs(body.get("input"))
        key = body.get("prompt_cache_key")
        key = key if isinstance(key, str) else None
        retention = body.get("prompt_cache_retention")
        prompt = self.openai.bill(
            segments, model, key, retention if isinstance(retention, str) else None, price, now
        )
        reply = self.reply(received)
        output = max(1, count_text(reply.rendering()))
        uncached = prompt.prompt_tokens - prompt.cached
        dollars = price.dollars(uncached, prompt.cached, 0, 0, output)
        if api == "chat":
            usage: dict[str, Any] = {
                "prompt_tokens": prompt.prompt_tokens,
                "completion_tokens": output,
                "total_tokens": prompt.prompt_tokens + output,
                "prompt_tokens_details": {"cached_tokens": prompt.cached, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
            }
        else:
            usage = {
                "input_tokens": prompt.prompt_tokens,
                "input_tokens_details": {"cached_tokens": prompt.cached},
                "output_tokens": output,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt.prompt_tokens + output,
            }
        bill = Bill(
            api,
            model,
            200,
            uncached=uncached,
            read=prompt.cached,
            output=output,
            dollars=dollars,
            cache_key=key,
            usage=usage,
        )
        if api == "chat":
            if streamed:
                options = body.get("stream_options")
                with_usage = isinstance(options, dict) and options.get("include_usage") is True
                return _Answer(
                    200, events=answers.chat_events(model, reply, usage, with_usage)
                ), bill
            return _Answer(200, answers.chat_completion(model, reply, usage)), bill
        if streamed:
            return _Answer(200, events=answers.responses_events(model, reply, usage)), bill
        return _Answer(200, answers.response_object(model, reply, usage)), bill


def _sse(name: str | None, data: Any) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {text}\n\n".encode()


def _handler_for(fake: BillingUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes: without this, keep-alive clients
            # wait ~40 ms for a delayed ACK on every answer.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = raw.decode(errors="replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer = fake.answer(Received("POST", self.path, headers, body))
            self.send_response(answer.status)
            self.send_header("request-id", "req_billing_fake")
            if answer.events is None:
                payload = json.dumps(answer.body).encode()
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            stream = b"".join(_sse(name, data) for name, data in answer.events)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(stream)))
            self.end_headers()
            self.wfile.write(stream)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
