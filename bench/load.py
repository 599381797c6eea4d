"""Load benchmark: concurrent clients on loopback against `/estimate` and the session flow
(append + prepare), with 1 and 2 uvicorn workers.

Each configuration runs the server as a subprocess on 127.0.0.1 with a temporary SQLite
database (`compactor serve --workers N`), waits for /readyz, then drives it with an
asyncio + httpx.AsyncClient load generator: C concurrent clients for S seconds per
scenario (after a short warm-up), bounded by a request cap. It prints requests per second,
p50 and p99 latency and the error count (which must be zero), and, as the baseline measured
in the same run, each scenario's throughput as a fraction of `/healthz` (the floor cost of
one HTTP round trip through the same stack) plus the 2-worker / 1-worker scaling.

`compactor serve` runs uvicorn with an HTTP protocol that turns Nagle's algorithm off on
each connection (app/serving.py): uvicorn's multi-worker path binds its listening socket
itself, so asyncio never sets TCP_NODELAY on accepted connections and, on Linux, every
keep-alive response after the first waits ~40 ms for the client's delayed ACK
(Kludex/uvicorn#3149). A third configuration, `2 workers, plain uvicorn`, runs the same
app without that protocol, to show what the fix is worth.

The load generator shares the machine with the server: on a 2-core machine it competes
with the workers for CPU, so read the numbers as relative, not as capacity.

Run: .venv/bin/python bench/load.py [--seconds 10] [--clients 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPT = ROOT / "tests/data/claude_code/4d5611e5.agent-a2898e3.openai.json"
HOST = "127.0.0.1"  # the benchmark never targets anything else
MAX_REQUESTS_PER_SCENARIO = 200_000
MAX_SECONDS = 60.0
MAX_CLIENTS = 64
WARMUP_SECONDS = 1.0
JSON = {"content-type": "application/json"}


@dataclass(frozen=True)
class ServerConfig:
    """How to start the server under test (the port and host are added)."""

    label: str
    command: tuple[str, ...]


CONFIGS = (
    ServerConfig("1 worker", ("-m", "app.cli", "serve", "--workers", "1")),
    ServerConfig("2 workers", ("-m", "app.cli", "serve", "--workers", "2")),
    # Plain uvicorn without the serve command's TCP_NODELAY protocol, for comparison.
    ServerConfig(
        "2 workers, plain uvicorn",
        ("-m", "uvicorn", "--factory", "app.main:create_app", "--workers", "2"),
    ),
)


@dataclass
class Sample:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str | None = None

    def fail(self, what: str) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = what


@dataclass(frozen=True)
class Result:
    scenario: str
    config: str
    requests: int
    errors: int
    seconds: float
    p50: float
    p99: float
    first_error: str | None

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


# One measured unit of work by one client: None when it succeeded, else what went wrong.
Operation = Callable[[httpx.AsyncClient, dict[str, Any]], Awaitable[str | None]]


async def healthz(http: httpx.AsyncClient, state: dict[str, Any]) -> str | None:
    response = await http.get("/healthz")
    return None if response.status_code == 200 else f"/healthz {response.status_code}"


def estimate_operation(body: bytes) -> Operation:
    async def estimate(http: httpx.AsyncClient, state: dict[str, Any]) -> str | None:
        response = await http.post("/estimate", content=body, headers=JSON)
        if response.status_code != 200:
            return f"/estimate {response.status_code}: {response.text[:200]}"
        return None

    return estimate


def session_flow_operation(messages: list[dict[str, Any]], model: str) -> Operation:
    """Append the transcript's next message, then `prepare`: one agent turn, two requests.

    Each client replays the real transcript into its own session, in order; when it runs
    out it starts a new session. Compactions happen along the way (trigger 20,000 tokens).
    """
    encoded = [json.dumps({"messages": [m]}).encode() for m in messages]
    settings = json.dumps(
        {"model": model, "format": "openai", "trigger_tokens": 20_000, "keep_recent_tokens": 4_000}
    ).encode()

    async def flow(http: httpx.AsyncClient, state: dict[str, Any]) -> str | None:
        if state.get("next", len(encoded)) >= len(encoded):
            created = await http.post("/sessions", content=settings, headers=JSON)
            if created.status_code != 201:
                return f"POST /sessions {created.status_code}: {created.text[:200]}"
            state["session"], state["next"] = created.json()["id"], 0
        sid = state["session"]
        appended = await http.post(
            f"/sessions/{sid}/messages", content=encoded[state["next"]], headers=JSON
        )
        state["next"] += 1
        if appended.status_code != 200:
            return f"append {appended.status_code}: {appended.text[:200]}"
        prepared = await http.post(f"/sessions/{sid}/prepare")
        if prepared.status_code != 200:
            return f"prepare {prepared.status_code}: {prepared.text[:200]}"
        return None

    return flow


async def drive(
    base_url: str, operation: Operation, clients: int, seconds: float
) -> tuple[Sample, float]:
    """`clients` concurrent loops of `operation` for `seconds` (after a warm-up)."""
    sample = Sample()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as http:
        warm_until = time.monotonic() + WARMUP_SECONDS
        until = warm_until + seconds
        count = 0

        async def client() -> None:
            nonlocal count
            state: dict[str, Any] = {}
            while time.monotonic() < warm_until:  # warm-up: not measured
                await operation(http, state)
            while time.monotonic() < until and count < MAX_REQUESTS_PER_SCENARIO:
                count += 1
                started = time.perf_counter()
                try:
                    problem = await operation(http, state)
                except httpx.HTTPError as exc:
                    problem = f"{type(exc).__name__}: {exc}"
                if problem is None:
                    sample.latencies.append(time.perf_counter() - started)
                else:
                    sample.fail(problem)

        await asyncio.gather(*(client() for _ in range(clients)))
        elapsed = time.monotonic() - warm_until
    return sample, elapsed


def summarize(scenario: str, config: str, sample: Sample, elapsed: float) -> Result:
    latencies = sorted(sample.latencies) or [0.0]
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return Result(
        scenario=scenario,
        config=config,
        requests=len(sample.latencies) + sample.errors,
        errors=sample.errors,
        seconds=elapsed,
        p50=statistics.median(latencies),
        p99=p99,
        first_error=sample.first_error,
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def compactor_server(config: ServerConfig, workdir: Path) -> Iterator[str]:
    """The server on 127.0.0.1 with its own SQLite file; yields its URL."""
    slug = config.label.replace(" ", "-").replace("+", "")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPACTOR_")}
    env["COMPACTOR_DATABASE_URL"] = f"sqlite:///{workdir / f'load-{slug}.db'}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    # Migrate once up front, so the workers do not race to do it at start.
    subprocess.run(
        [sys.executable, "-m", "app.cli", "migrate"],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    env["COMPACTOR_AUTO_MIGRATE"] = "false"
    port = _free_port()
    log_path = workdir / f"serve-{slug}.log"
    command = [sys.executable, *config.command, "--host", HOST, "--port", str(port)]
    command += ["--log-level", "warning"]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=log)
    url = f"http://{HOST}:{port}"
    try:
        _wait_ready(url, process, log_path)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _wait_ready(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited early:\n{log_path.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server was not ready in 60 s:\n{log_path.read_text()[-2000:]}")


def run(configs: tuple[ServerConfig, ...], clients: int, seconds: float) -> list[Result]:
    doc = json.loads(TRANSCRIPT.read_text(encoding="utf-8"))
    messages, model = doc["messages"], doc.get("model") or "gpt-4o"
    estimate_body = json.dumps({"messages": messages, "model": model}).encode()
    scenarios: list[tuple[str, Operation]] = [
        ("GET /healthz (baseline)", healthz),
        (f"POST /estimate ({len(messages)} msgs)", estimate_operation(estimate_body)),
        ("session turn (2 requests)", session_flow_operation(messages, model)),
    ]
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="compactor-load-") as tmp:
        for config in configs:
            with compactor_server(config, Path(tmp)) as url:
                for name, operation in scenarios:
                    sample, elapsed = asyncio.run(drive(url, operation, clients, seconds))
                    result = summarize(name, config.label, sample, elapsed)
                    results.append(result)
                    print(_row(result, _baseline(results, config.label)), flush=True)
    return results


def _baseline(results: list[Result], config: str) -> Result | None:
    return next((r for r in results if r.config == config and "baseline" in r.scenario), None)


HEADER = (
    f"{'scenario':<27} {'server':<18} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
    f"{'errors':>6} {'vs healthz':>10}"
)


def _row(r: Result, baseline: Result | None) -> str:
    ratio = f"{r.rps / baseline.rps:9.3f}x" if baseline is not None else f"{'—':>10}"
    return (
        f"{r.scenario:<27} {r.config:<18} {r.rps:8.1f} {r.p50 * 1000:8.2f} "
        f"{r.p99 * 1000:8.2f} {r.errors:>6} {ratio}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description="Load benchmark on 127.0.0.1.")
    parser.add_argument("--seconds", type=float, default=10.0, help="per scenario")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    args = parser.parse_args()
    seconds = min(max(args.seconds, 1.0), MAX_SECONDS)
    clients = min(max(args.clients, 1), MAX_CLIENTS)
    print(
        f"load: {clients} concurrent clients, {seconds:g} s per scenario after "
        f"{WARMUP_SECONDS:g} s warm-up, cpu count {os.cpu_count()}, SQLite, loopback"
    )
    print("a session turn is append one message + prepare; its req/s counts turns")
    print(HEADER)
    results = run(CONFIGS, clients, seconds)
    by_key = {(r.scenario, r.config): r for r in results}
    print(f"\nscaling against 1 worker (throughput): {'2 workers':>10} {'plain':>10}")
    for scenario in dict.fromkeys(r.scenario for r in results):
        one = by_key[(scenario, CONFIGS[0].label)].rps
        ratios = [by_key[(scenario, c.label)].rps / one for c in CONFIGS[1:]]
        print(f"  {scenario:<37} " + " ".join(f"{ratio:9.2f}x" for ratio in ratios))
    failed = [r for r in results if r.errors]
    for r in failed:
        print(f"ERRORS in {r.scenario} ({r.config}): {r.errors}; first: {r.first_error}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
