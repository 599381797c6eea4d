"""Tracing overhead (SPEC §18): a proxied ~150k-token request (cold: every message new to
the service, so it is counted in full; gpt-4.1's 1M window keeps it under the threshold)
through a service with tracing off and one with it on (OTLP/HTTP to a loopback sink),
taking turns request by request, in one run; the ratio on/off of the medians.

Tracing off is the null tracer: its cost per request is measured directly (the span
calls a proxied request makes, in a loop), next to the request's own latency.

Run: .venv/bin/python bench/tracing.py [--n 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.services.tracing import NullTracer, SpanKind  # noqa: E402
from bench.common import free_port  # noqa: E402
from bench.proxy import interleaved, salted, wait_ready  # noqa: E402

DATA = ROOT / "tests" / "data" / "claude_code"
TRANSCRIPT = DATA / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.openai.json"


class _Sink(BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that takes every export and answers 200."""

    received = 0
    spans = 0

    def do_POST(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        payload = self.rfile.read(int(self.headers.get("content-length") or 0))
        export = ExportTraceServiceRequest()
        export.ParseFromString(payload)
        _Sink.received += len(payload)
        _Sink.spans += sum(
            len(scope.spans) for res in export.resource_spans for scope in res.scope_spans
        )
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def history_of_150k() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = orjson.loads(TRANSCRIPT.read_bytes())["messages"]
    # The transcript is ~141k tokens; its first messages again bring it to ~150k.
    return [*messages, *messages[: len(messages) // 15]]


def null_tracer_cost(rounds: int = 200_000) -> float:
    """Seconds the null tracer adds to one proxied request (the calls it makes)."""
    tracer = NullTracer()
    start = time.perf_counter()
    for _ in range(rounds):
        with tracer.server_span("POST", {}, {}) as span:
            span.update_name("POST /v1/chat/completions")
            with tracer.span("count", attributes={}) as inner:
                inner.set_attribute("compactor.tokens", 1)
            client = tracer.start("chat", kind=SpanKind.CLIENT, attributes={})
            client.set_attribute("http.response.status_code", 200)
            client.end()
    return (time.perf_counter() - start) / rounds


def start_service(
    port: int, upstream: str, workdir: str, otlp: str | None
) -> subprocess.Popen[bytes]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    env.update(
        {
            "COMPACTOR_DATABASE_URL": f"sqlite:///{workdir}/compactor-{port}.db",
            "COMPACTOR_UPSTREAM_OPENAI_URL": f"{upstream}/v1",
        }
    )
    if otlp is not None:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp
        # Exports every half second, so their cost falls within the measured requests.
        env["OTEL_BSP_SCHEDULE_DELAY"] = "500"
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=30, help="cold requests per service")
    args = parser.parse_args()
    upstream_port, off_port, on_port = free_port(), free_port(), free_port()
    upstream = f"http://127.0.0.1:{upstream_port}"
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    otlp = f"http://127.0.0.1:{sink.server_address[1]}"
    workdir = tempfile.mkdtemp(prefix="bench-tracing-")
    children = [
        subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "bench" / "proxy.py"),
                "--serve-upstream",
                str(upstream_port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
        start_service(off_port, upstream, workdir, None),
        start_service(on_port, upstream, workdir, otlp),
    ]
    try:
        wait_ready(upstream)
        off, on = f"http://127.0.0.1:{off_port}", f"http://127.0.0.1:{on_port}"
        wait_ready(f"{off}/healthz")
        wait_ready(f"{on}/healthz")
        run(off, on, args.n)
    finally:
        for child in children:
            child.terminate()
            child.wait(timeout=10)
        sink.shutdown()


def run(off: str, on: str, n: int) -> None:
    base = history_of_150k()
    headers = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
    with httpx.Client(timeout=120) as client:
        size = client.post(f"{off}/estimate", json={"model": "gpt-4.1", "messages": base}).json()[
            "tokens"
        ]
        bodies = [
            orjson.dumps({"model": "gpt-4.1", "messages": salted(base, i)}) for i in range(n + 2)
        ]

        def post(url: str) -> Any:
            return lambda body: client.post(
                f"{url}/v1/chat/completions", content=body, headers=headers
            )

        # Two warm-up requests each (tokenizers, connections), then taking turns.
        interleaved([post(off), post(on)], bodies[:2])
        off_s, on_s = interleaved([post(off), post(on)], bodies[2:])
        time.sleep(1.5)  # the last batch goes out
    off50, on50 = statistics.median(off_s), statistics.median(on_s)
    null = null_tracer_cost()
    print(f"tracing overhead: a proxied {size:,}-token request, cold, n={n} each, taking turns")
    print(f"  tracing off (null tracer)   p50 {off50 * 1000:8.1f} ms")
    print(f"  tracing on (OTLP/HTTP)      p50 {on50 * 1000:8.1f} ms")
    print(f"  on / off                    {on50 / off50:8.3f}   (target <= 1.05)")
    print(f"  null tracer per request     {null * 1e6:8.2f} µs = {null / off50:.5%} of the request")
    print(
        f"  spans exported              {_Sink.spans:,} ({_Sink.received:,} bytes of OTLP "
        f"protobuf) for {n + 2} proxied requests and the health checks"
    )


if __name__ == "__main__":
    main()
