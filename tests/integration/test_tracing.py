"""OpenTelemetry tracing (SPEC §18) against a loopback OTLP/HTTP receiver: the span tree of
a proxied request that compacts (request → count → compaction → summarizer call, and the
upstream call) with the GenAI attributes, and `traceparent` propagated to the upstream and
to the summarizer in the same trace. Off (no OTEL_EXPORTER_OTLP_ENDPOINT), neither the
OpenTelemetry SDK nor the exporter is imported."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.settings import Settings
from tests.integration.fake_providers import OpenAIFake
from tests.integration.fake_upstreams import (
    Answer,
    FakeUpstream,
    anthropic_message,
    chat_completion,
)
from tests.integration.live_server import live_service
from tests.integration.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.integration.proxy.clients import anthropic_client, close_clients, openai_client

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_PARENT = "00f067aa0ba902b7"


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as otlp:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.base_url)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "compactor-under-test")
        yield otlp


def _traceparent(header: str) -> tuple[str, str]:
    version, trace_id, parent_id, flags = header.split("-")
    assert version == "00" and int(flags, 16) & 1  # sampled
    return trace_id, parent_id


def _one(spans: list[ReceivedSpan]) -> ReceivedSpan:
    assert len(spans) == 1, spans
    return spans[0]


def test_a_compacting_proxied_request_is_one_trace_from_the_caller_to_the_summarizer(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
    with FakeUpstream() as upstream, OpenAIFake() as summarizer:
        upstream.script(
            Answer(json=chat_completion("ok", prompt_tokens=2_000)),
            Answer(
                json={
                    **anthropic_message("ok"),
                    "usage": {
                        "input_tokens": 20,
                        "output_tokens": 7,
                        "cache_read_input_tokens": 900,
                        "cache_creation_input_tokens": 80,
                    },
                }
            ),
        )
        settings = Settings(
            database_url=f"sqlite:///{tmp_path / 'c.db'}",
            upstream_openai_url=f"{upstream.base_url}/v1",
            upstream_anthropic_url=upstream.base_url,
            summarizer="openai",
            summarizer_base_url=f"{summarizer.base_url}/v1",
            summarizer_model="gpt-4o-mini",
            summarizer_api_key="sk-summarizer",
            # The summary is made inside this request, so its span is in the caller's trace
            # (prepared ahead, it would be made in the background after the request).
            prepare_ahead_ratio="off",
        )
        history = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "word " * 900}
            for i in range(12)
        ]
        with live_service(settings) as url:
            client = openai_client(url, traceparent=f"00-{CALLER_TRACE}-{CALLER_PARENT}-01")
            raw = client.chat.completions.with_raw_response.create(model="gpt-4", messages=history)
            assert raw.headers["x-compactor-compacted"] == "true"
            anthropic_client(url).messages.create(
                model="claude-sonnet-4-5", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
            close_clients()
        # The server has stopped: its lifespan flushed the batched spans.

    server = _one(receiver.by_name("POST /v1/chat/completions"))
    assert server.kind == "server" and server.service == "compactor-under-test"
    # The caller's trace goes on: same trace id, the caller's span as parent.
    assert (server.trace_id, server.parent_id) == (CALLER_TRACE, CALLER_PARENT)
    assert server.attributes["http.route"] == "/v1/chat/completions"
    assert server.attributes["http.response.status_code"] == 200

    count = _one([s for s in receiver.by_name("count") if s.trace_id == CALLER_TRACE])
    assert count.parent_id == server.span_id
    assert count.attributes["compactor.tokens"] > count.attributes["compactor.threshold"]
    compaction = _one(receiver.by_name("compaction"))
    assert compaction.parent_id == server.span_id and compaction.trace_id == CALLER_TRACE
    assert compaction.attributes["compactor.compacted"] is True
    assert (
        compaction.attributes["compactor.tokens_after"]
        < compaction.attributes["compactor.tokens_before"]
    )
    summary = _one(receiver.by_name("chat gpt-4o-mini"))
    assert summary.kind == "client" and summary.parent_id == compaction.span_id
    assert summary.attributes["gen_ai.operation.name"] == "chat"
    assert summary.attributes["gen_ai.provider.name"] == "openai"
    assert summary.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert summary.attributes["gen_ai.usage.input_tokens"] == 1200
    assert summary.attributes["gen_ai.usage.output_tokens"] == 300

    forwarded = _one(receiver.by_name("chat gpt-4"))
    assert forwarded.kind == "client" and forwarded.parent_id == server.span_id
    assert forwarded.attributes["gen_ai.provider.name"] == "openai"
    assert forwarded.attributes["gen_ai.request.model"] == "gpt-4"
    assert forwarded.attributes["gen_ai.usage.input_tokens"] == 2_000
    assert forwarded.attributes["gen_ai.usage.output_tokens"] == 7
    assert forwarded.attributes["http.response.status_code"] == 200

    # traceparent reached the upstream and the summarizer, naming their client spans.
    sent_upstream = upstream.received[0].headers["traceparent"]
    assert _traceparent(sent_upstream) == (CALLER_TRACE, forwarded.span_id)
    sent_summarizer = summarizer.received[0].headers["traceparent"]
    assert _traceparent(sent_summarizer) == (CALLER_TRACE, summary.span_id)

    messages = _one(receiver.by_name("chat claude-sonnet-4-5"))
    assert messages.trace_id != CALLER_TRACE  # a request without a traceparent starts one
    assert messages.attributes["gen_ai.provider.name"] == "anthropic"
    assert messages.attributes["gen_ai.usage.input_tokens"] == 20 + 900 + 80
    assert messages.attributes["gen_ai.usage.cache_read.input_tokens"] == 900
    assert messages.attributes["gen_ai.usage.cache_creation.input_tokens"] == 80
    assert _traceparent(upstream.received[1].headers["traceparent"])[0] == messages.trace_id
    assert set(receiver.content_types) == {"application/x-protobuf"}


def test_an_upstream_error_marks_the_span_failed(tmp_path: Path, receiver: OtlpReceiver) -> None:
    with FakeUpstream() as upstream:
        upstream.script(Answer(429, {"error": {"message": "slow", "type": "rate_limit"}}))
        settings = Settings(
            database_url=f"sqlite:///{tmp_path / 'c.db'}",
            upstream_openai_url=f"{upstream.base_url}/v1",
        )
        with live_service(settings) as url:
            with pytest.raises(Exception, match="429"):
                openai_client(url).chat.completions.create(
                    model="gpt-4", messages=[{"role": "user", "content": "hi"}]
                )
            close_clients()
    failed = _one(receiver.by_name("chat gpt-4"))
    assert failed.error and failed.attributes["http.response.status_code"] == 429


def test_off_without_the_endpoint_no_sdk_or_exporter_is_imported(tmp_path: Path) -> None:
    # (FastAPI itself imports the opentelemetry API package when it is installed.)
    script = f"""
import os, sys
os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
from fastapi.testclient import TestClient
from app.main import create_app
from app.settings import Settings
app = create_app(Settings(database_url="sqlite:///{tmp_path / "c.db"}"))
with TestClient(app) as client:
    body = {{"messages": [{{"role": "user", "content": "hi"}}]}}
    assert client.post("/estimate", json=body).status_code == 200
loaded = ("opentelemetry.sdk", "opentelemetry.exporter", "app.providers.otel_tracing")
print(sorted(m for m in sys.modules if m.startswith(loaded)))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(out.stdout.strip().replace("'", '"')) == []
