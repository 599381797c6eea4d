"""The log lines of a real `compactor serve`: JSON, RFC 3339 timestamps with milliseconds
and zone, and the request id on every line written while a request is handled — the
proxy's own lines included, not only the access line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.fake_upstreams import Answer, FakeUpstream, chat_completion
from tests.postgres import _free_port

ROOT = Path(__file__).resolve().parents[2]
RFC3339_MILLIS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$")


class Served:
    def __init__(self, url: str, log: Path) -> None:
        self.url = url
        self.log = log

    def lines(self) -> list[dict[str, Any]]:
        text = self.log.read_text("utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def lines_until(self, wanted: str, request_id: str) -> list[dict[str, Any]]:
        """The log once the access line of `request_id` is written (it is the last)."""
        deadline = time.monotonic() + 30
        while True:
            lines = self.lines()
            if any(e["msg"] == wanted and e.get("request_id") == request_id for e in lines):
                return lines
            assert time.monotonic() < deadline, self.log.read_text("utf-8")
            time.sleep(0.05)


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as fake:
        yield fake


@pytest.fixture
def served(tmp_path: Path, upstream: FakeUpstream) -> Iterator[Served]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPACTOR_")}
    env.update(
        COMPACTOR_DATABASE_URL=f"sqlite:///{tmp_path / 'compactor.db'}",
        COMPACTOR_UPSTREAM_OPENAI_URL=f"{upstream.base_url}/v1",
        COMPACTOR_STATE_KEY="state-key-for-the-log-test",
    )
    port = _free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert server.poll() is None, log_path.read_text("utf-8")
                assert time.monotonic() < deadline, "the service did not become ready"
                time.sleep(0.2)
            yield Served(url, log_path)
        finally:
            server.terminate()
            server.wait(timeout=30)


def test_every_line_is_json_with_an_rfc3339_millisecond_timestamp(served: Served) -> None:
    httpx.get(f"{served.url}/healthz", headers={"X-Request-ID": "req-health"})
    lines = served.lines_until("request", "req-health")
    assert len(lines) >= 2  # start-up lines and the access line
    for entry in lines:
        assert RFC3339_MILLIS.match(entry["ts"]), entry
        assert {"level", "logger", "msg"} <= entry.keys()


def test_the_proxy_line_carries_the_request_id(served: Served, upstream: FakeUpstream) -> None:
    upstream.script(Answer(json=chat_completion("hi")))
    # A role the service cannot count: the proxy forwards the history as sent and says so.
    answer = httpx.post(
        f"{served.url}/v1/chat/completions",
        json={"model": "gpt-4", "messages": [{"role": "wizard", "content": "hi"}]},
        headers={"X-Request-ID": "req-proxy-1", "Authorization": "Bearer sk-caller"},
        timeout=30,
    )
    assert answer.status_code == 200
    lines = served.lines_until("request", "req-proxy-1")
    (proxy_line,) = [e for e in lines if e["logger"] == "compactor.proxy"]
    assert proxy_line["msg"] == "proxy left the history as sent"
    assert proxy_line["request_id"] == "req-proxy-1"
    assert proxy_line["reason"].startswith("history not compactable")
    # Nothing written while handling it lacks the id (the start-up lines come before).
    first = lines.index(proxy_line)
    assert all(e.get("request_id") == "req-proxy-1" for e in lines[first:]), lines[first:]
    assert "sk-caller" not in served.log.read_text("utf-8")


def test_an_upstream_request_id_is_kept_and_the_services_own_goes_beside_it(
    served: Served, upstream: FakeUpstream
) -> None:
    upstream.script(Answer(json=chat_completion("hi"), headers={"x-request-id": "req_vendor"}))
    answer = httpx.post(
        f"{served.url}/v1/chat/completions",
        json={"model": "gpt-4", "messages": [{"role": "user", "content": "hi"}]},
        headers={"Authorization": "Bearer sk-caller"},
        timeout=30,
    )
    assert answer.headers["x-request-id"] == "req_vendor"
    own = answer.headers["x-compactor-request-id"]
    lines = served.lines_until("request", own)
    (access,) = [e for e in lines if e.get("request_id") == own and e["msg"] == "request"]
    assert access["path"] == "/v1/chat/completions" and access["status"] == 200
