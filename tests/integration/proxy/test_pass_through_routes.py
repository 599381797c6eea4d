"""Pass-through (SPEC §18): the /v1 routes the service does not manage reach the right
upstream unchanged, with the official SDKs, one client for everything; bodies and answers
stream both ways; an unconfigured upstream is an error the SDKs do not retry."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from starlette.routing import Route

from app.api.routes.pass_through import (
    PASS_THROUGH_PATH,
    handled_by_pass_through,
    is_pass_through,
)
from app.main import create_app
from app.settings import Settings
from tests.integration.fake_upstreams import Answer, FakeUpstream, Received
from tests.integration.live_server import live_service
from tests.integration.loopback_server import LoopbackServer
from tests.integration.proxy.clients import anthropic_client, openai_client

FILE_BYTES = b'{"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions"}\n' * 50
BATCH = {
    "id": "batch_1",
    "object": "batch",
    "endpoint": "/v1/chat/completions",
    "input_file_id": "file-1",
    "completion_window": "24h",
    "status": "validating",
    "created_at": 1,
}
MESSAGE_BATCH = {
    "id": "msgbatch_1",
    "type": "message_batch",
    "processing_status": "in_progress",
    "request_counts": {"processing": 1, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
    "created_at": "2026-01-01T00:00:00Z",
    "expires_at": "2026-01-02T00:00:00Z",
    "ended_at": None,
    "cancel_initiated_at": None,
    "archived_at": None,
    "results_url": None,
}


def vendor_answers(received: Received) -> Answer | None:
    """What each unmanaged route of the fake vendors answers (minimal valid objects)."""
    path = received.path.split("?", 1)[0]
    routes: dict[tuple[str, str], Any] = {
        ("POST", "/v1/embeddings"): {
            "object": "list",
            "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5]}],
            "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": 2, "total_tokens": 2},
        },
        ("POST", "/v1/completions"): {
            "id": "cmpl-1",
            "object": "text_completion",
            "created": 1,
            "model": "gpt-3.5-turbo-instruct",
            "choices": [{"text": "done", "index": 0, "finish_reason": "stop", "logprobs": None}],
        },
        ("POST", "/v1/files"): {
            "id": "file-1",
            "object": "file",
            "bytes": len(received.raw),
            "created_at": 1,
            "filename": "batch.jsonl",
            "purpose": "batch",
            "status": "processed",
        },
        ("DELETE", "/v1/files/file-1"): {"id": "file-1", "object": "file", "deleted": True},
        ("POST", "/v1/batches"): BATCH,
        ("GET", "/v1/batches/batch_1"): BATCH,
        ("POST", "/v1/messages/batches"): MESSAGE_BATCH,
        ("GET", "/v1/messages/batches/msgbatch_1"): MESSAGE_BATCH,
        ("GET", "/v1/messages/batches"): {
            "data": [MESSAGE_BATCH],
            "has_more": False,
            "first_id": "msgbatch_1",
            "last_id": "msgbatch_1",
        },
    }
    if (received.method, path) == ("GET", "/v1/files/file-1/content"):
        return Answer(raw_body=FILE_BYTES)
    found = routes.get((received.method, path))
    return Answer(json=found) if found is not None else None


@dataclass
class TwoVendors:
    url: str
    openai: FakeUpstream
    anthropic: FakeUpstream


@pytest.fixture
def vendors(tmp_path: Path) -> Iterator[TwoVendors]:
    """The service in front of two fakes, one per vendor: where a request lands is seen."""
    with FakeUpstream() as openai_up, FakeUpstream() as anthropic_up:
        openai_up.responder = anthropic_up.responder = vendor_answers
        settings = Settings(
            database_url=f"sqlite:///{tmp_path / 'c.db'}",
            upstream_openai_url=f"{openai_up.base_url}/v1",
            upstream_anthropic_url=anthropic_up.base_url,
        )
        with live_service(settings) as url:
            yield TwoVendors(url, openai_up, anthropic_up)


def test_one_openai_client_for_everything(vendors: TwoVendors) -> None:
    client = openai_client(vendors.url, **{"OpenAI-Project": "proj-1", "X-Compactor-Mode": "off"})
    chat = client.chat.completions.create(
        model="gpt-4", messages=[{"role": "user", "content": "hi"}]
    )
    assert chat.choices[0].message.content == "Reply to 1 items."
    embedding = client.embeddings.create(model="text-embedding-3-small", input="hello")
    assert embedding.data[0].embedding == [0.25, -0.5]
    completion = client.completions.create(model="gpt-3.5-turbo-instruct", prompt="Say done")
    assert completion.choices[0].text == "done"
    uploaded = client.files.create(file=("batch.jsonl", FILE_BYTES), purpose="batch")
    assert uploaded.id == "file-1" and uploaded.bytes > len(FILE_BYTES)  # the multipart body
    batch = client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    assert client.batches.retrieve(batch.id).status == "validating"
    assert client.files.content("file-1").read() == FILE_BYTES
    assert client.files.delete("file-1").deleted is True

    received = vendors.openai.received
    assert [(r.method, r.path.split("?")[0]) for r in received] == [
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/embeddings"),
        ("POST", "/v1/completions"),
        ("POST", "/v1/files"),
        ("POST", "/v1/batches"),
        ("GET", "/v1/batches/batch_1"),
        ("GET", "/v1/files/file-1/content"),
        ("DELETE", "/v1/files/file-1"),
    ]
    assert vendors.anthropic.received == []
    assert received[1].body == {
        "model": "text-embedding-3-small",
        "input": "hello",
        "encoding_format": "base64",
    } or received[1].body == {"model": "text-embedding-3-small", "input": "hello"}
    upload = received[3]
    assert upload.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert FILE_BYTES in upload.raw and b'name="purpose"' in upload.raw
    for r in received:
        assert r.headers["authorization"] == "Bearer sk-caller"
        assert r.headers["openai-project"] == "proj-1"
        assert not [name for name in r.headers if name.startswith("x-compactor-")]


def test_one_anthropic_client_for_messages_and_batches(vendors: TwoVendors) -> None:
    client = anthropic_client(vendors.url)
    message = client.messages.create(
        model="claude-sonnet-4-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].type == "text"
    batch = client.messages.batches.create(
        requests=[
            {
                "custom_id": "r1",
                "params": {
                    "model": "claude-sonnet-4-5",
                    "max_tokens": 10,
                    "messages": [{"role": "user", "content": "hi"}],
                },
            }
        ]
    )
    assert batch.id == "msgbatch_1"
    assert client.messages.batches.retrieve("msgbatch_1").processing_status == "in_progress"
    listed = client.messages.batches.list(limit=2)
    assert [b.id for b in listed.data] == ["msgbatch_1"]

    received = vendors.anthropic.received
    assert [(r.method, r.path) for r in received] == [
        ("POST", "/v1/messages"),
        ("POST", "/v1/messages/batches"),
        ("GET", "/v1/messages/batches/msgbatch_1"),
        ("GET", "/v1/messages/batches?limit=2"),
    ]
    assert vendors.openai.received == []
    assert received[1].body["requests"][0]["custom_id"] == "r1"
    for r in received:
        assert r.headers["authorization"] == "Bearer sk-ant-caller"
        assert "anthropic-version" in r.headers


def test_the_upstream_is_chosen_by_anthropic_version_then_by_path(vendors: TwoVendors) -> None:
    with httpx.Client(base_url=vendors.url) as http:
        http.get("/v1/files", headers={"anthropic-version": "2023-06-01"})
        http.get("/v1/messages/batches")  # no header: the path says Anthropic
        http.get("/v1/files")
    assert [r.path for r in vendors.anthropic.received] == ["/v1/files", "/v1/messages/batches"]
    assert [r.path for r in vendors.openai.received] == ["/v1/files"]


def test_method_query_body_and_answer_go_through_unchanged(vendors: TwoVendors) -> None:
    body = b"\x00\x01 not json \xff"
    vendors.openai.script(
        Answer(
            status=418,
            raw_body=b"teapot",
            headers={"x-vendor": "v1", "x-request-id": "req_up"},
        )
    )
    with httpx.Client(base_url=vendors.url) as http:
        answer = http.patch(
            "/v1/fine_tuning/jobs/ft-1?a=1&b=x%2Fy",
            content=body,
            headers={"authorization": "Bearer sk-1", "x-compactor-anything": "secret"},
        )
    assert answer.status_code == 418 and answer.content == b"teapot"
    assert answer.headers["x-vendor"] == "v1" and answer.headers["x-request-id"] == "req_up"
    sent = vendors.openai.received[-1]
    assert (sent.method, sent.raw) == ("PATCH", body)
    assert sent.path == "/v1/fine_tuning/jobs/ft-1?a=1&b=x%2Fy"
    assert sent.headers["authorization"] == "Bearer sk-1"
    assert "x-compactor-anything" not in sent.headers


def test_an_escaped_slash_stays_escaped_and_dot_segments_are_refused(
    vendors: TwoVendors,
) -> None:
    with httpx.Client(base_url=vendors.url) as http:
        http.get("/v1/vector_stores/vs%2F1/files")
        refused = [http.get(p) for p in ("/v1/files/../../admin", "/v1/files/%2e%2e/admin")]
    assert vendors.openai.received[-1].path == "/v1/vector_stores/vs%2F1/files"
    assert [r.status_code for r in refused] == [404, 404]
    assert len(vendors.openai.received) == 1


# -- streaming both ways ----------------------------------------------------------------

_WAIT = 20.0


class GatedUpstream(LoopbackServer):
    """Proves streaming without timing: an upload's first chunk must arrive while the
    client still holds the rest back; a download's first part must reach the client
    while the upstream still holds the rest back."""

    def __init__(self) -> None:
        self.first_chunk = threading.Event()
        self.release = threading.Event()
        self.uploaded = b""
        super().__init__(self._handler())

    def _releasing(self) -> None:
        self.first_chunk.set()
        self.release.set()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        break
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
                    fake.first_chunk.set()
                fake.uploaded = b"".join(parts)
                payload = json.dumps({"bytes": len(fake.uploaded)}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                first, rest = b"a" * 65_536, b"b" * 65_536
                self.send_response(200)
                self.send_header("content-type", "application/octet-stream")
                self.send_header("content-length", str(len(first) + len(rest)))
                self.end_headers()
                self.wfile.write(first)
                self.wfile.flush()
                fake.release.wait(_WAIT)
                self.wfile.write(rest)
                self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[tuple[str, GatedUpstream]]:
    with GatedUpstream() as fake:
        settings = Settings(
            database_url=f"sqlite:///{tmp_path / 'c.db'}",
            upstream_openai_url=f"{fake.base_url}/v1",
            max_body_bytes=4_000_000,
        )
        with live_service(settings) as url:
            yield url, fake


def test_an_upload_is_forwarded_as_it_arrives(gated: tuple[str, GatedUpstream]) -> None:
    url, fake = gated
    first, rest = b"x" * 100_000, b"y" * 3_000_000
    arrived_early: list[bool] = []

    def upload() -> Iterator[bytes]:
        yield first
        # Held back until the upstream has the first chunk: a service that buffers the
        # body would never forward it, and this waits in vain.
        arrived_early.append(fake.first_chunk.wait(_WAIT))
        yield rest

    answer = httpx.post(f"{url}/v1/uploads/up-1/parts", content=upload(), timeout=60)
    assert arrived_early == [True]
    assert answer.status_code == 200 and answer.json() == {"bytes": len(first) + len(rest)}
    assert fake.uploaded == first + rest


def test_a_download_is_relayed_as_it_arrives(gated: tuple[str, GatedUpstream]) -> None:
    url, fake = gated
    with httpx.stream("GET", f"{url}/v1/files/file-1/content", timeout=_WAIT) as answer:
        assert answer.headers["content-length"] == "131072"
        chunks = answer.iter_bytes()
        received = b""
        while len(received) < 65_536:
            received += next(chunks)  # arrives while the upstream holds the rest back
        fake.release.set()
        received += b"".join(chunks)
    assert received == b"a" * 65_536 + b"b" * 65_536


def test_a_streamed_upload_over_the_limit_is_413(gated: tuple[str, GatedUpstream]) -> None:
    url, _ = gated

    def too_much() -> Iterator[bytes]:
        for _ in range(50):
            yield b"z" * 100_000  # 5 MB, chunked: no length declared

    answer = httpx.post(f"{url}/v1/files", content=too_much(), timeout=60)
    assert answer.status_code == 413
    assert "COMPACTOR_MAX_BODY_BYTES" in answer.json()["detail"]
    declared = httpx.post(f"{url}/v1/files", content=b"z" * 5_000_000, timeout=60)
    assert declared.status_code == 413


# -- route order -----------------------------------------------------------------------


def test_every_managed_v1_route_wins_over_the_catch_all(tmp_path: Path) -> None:
    """Routes added later (a new vendor API, generated routes) are in the OpenAPI document:
    each must reach its own endpoint, not the catch-all registered after it."""
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}"))
    routes = app.router.routes
    last = routes[-1]
    assert isinstance(last, Route) and last.path == PASS_THROUGH_PATH
    streamed = handled_by_pass_through(app)
    managed = [
        (method.upper(), path)
        for path, methods in app.openapi()["paths"].items()
        if path.startswith("/v1/")
        for method in methods
    ]
    assert len(managed) >= 8
    for method, template in managed:
        path = re.sub(r"\{[^}]+\}", "x-1", template)
        scope = {"type": "http", "path": path, "method": method, "root_path": "", "headers": []}
        assert not is_pass_through(routes, scope), f"{method} {template} is shadowed"
        assert not streamed(scope)
    for method, path in [("POST", "/v1/embeddings"), ("GET", "/v1/chat/completions")]:
        scope = {"type": "http", "path": path, "method": method, "root_path": "", "headers": []}
        assert is_pass_through(routes, scope) and streamed(scope)


# -- first run: no upstream configured ---------------------------------------------------


def test_an_unconfigured_upstream_is_raised_once_by_each_sdk(tmp_path: Path) -> None:
    sent: list[str] = []

    def count(request: httpx.Request) -> None:
        sent.append(request.url.path)

    with live_service(Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}")) as url:
        oai = openai.OpenAI(
            base_url=f"{url}/v1",
            api_key="sk-x",
            max_retries=2,
            http_client=httpx.Client(event_hooks={"request": [count]}),
        )
        with pytest.raises(openai.BadRequestError) as caught:
            oai.chat.completions.create(model="gpt-4", messages=[{"role": "user", "content": "x"}])
        assert sent == ["/v1/chat/completions"]
        assert caught.value.status_code == 400
        assert caught.value.code == "upstream_not_configured"
        assert "COMPACTOR_UPSTREAM_OPENAI_URL" in caught.value.message
        with pytest.raises(openai.BadRequestError):
            oai.embeddings.create(model="text-embedding-3-small", input="x")
        assert sent[-1] == "/v1/embeddings" and len(sent) == 2
        oai.close()

        ant = anthropic.Anthropic(
            base_url=url,
            api_key="sk-ant-x",
            max_retries=2,
            http_client=httpx2.Client(event_hooks={"request": [count]}),
        )
        with pytest.raises(anthropic.BadRequestError) as refused:
            ant.messages.create(
                model="claude-sonnet-4-5", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        assert sent[2:] == ["/v1/messages"]
        assert refused.value.body == {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "no anthropic upstream is configured; set "
                "COMPACTOR_UPSTREAM_ANTHROPIC_URL to the API's base URL to use the proxy routes",
            },
        }
        ant.close()


def test_pass_through_credentials_are_not_logged(
    vendors: TwoVendors, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = openai_client(vendors.url)
    client.embeddings.create(model="text-embedding-3-small", input="hello")
    client.files.create(file=("batch.jsonl", FILE_BYTES), purpose="batch")
    assert vendors.openai.received[-1].headers["authorization"] == "Bearer sk-caller"
    assert "sk-caller" not in caplog.text
