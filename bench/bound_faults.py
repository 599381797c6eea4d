"""Fault run of session-bound proxy requests (issue 21.1, SPEC §10): is every bound turn
recorded exactly once when retries are in flight, PostgreSQL restarts and a replica dies?

Setup, all real and on 127.0.0.1: a throwaway PostgreSQL cluster; two replicas
(`compactor serve` subprocesses) on it, both in front of one slow fake OpenAI upstream
(every answer takes 0.2-0.8 s); half the sessions have a low trigger, so they compact
(extractive summarizer) as they go.

Each client drives one session turn by turn, sending its whole history plus a new user
message to `/v1/chat/completions` with `X-Compactor-Session`, to a random replica:

- in flight: with probability `--inflight`, a second copy of the same body goes to the
  other replica 50-400 ms later, while the first still waits for the upstream (the SDK's
  retry after a read timeout, to whichever replica the balancer picks);
- after: with probability `--after`, the same body is sent again once answered (the
  caller never saw the answer);
- on a failure (connection refused or reset, a 5xx while PostgreSQL restarts) the client
  retries the same body until it is answered.

Meanwhile PostgreSQL is stopped at once (`pg_ctl stop -m immediate`, a crash) and started
again every `--restart-every` seconds, and replica 2 is killed with SIGKILL once and
started again.

Then every transcript is read back: each turn must be there exactly once — its user
message once, one assistant reply after it, nothing else. The run prints what it did
and what it found; the exit status is 1 when a turn was lost or recorded twice.

`--code DIR` runs the replicas from another checkout (e.g. `git archive main | tar -x -C
/tmp/main`) to see the same faults on older code.

Run: .venv/bin/python bench/bound_faults.py [--sessions 12] [--turns 12]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.fake_upstreams import (  # noqa: E402
    Answer,
    FakeUpstream,
    Received,
    chat_completion,
    prompt_size,
)
from tests.postgres import restartable_cluster  # noqa: E402

HOST = "127.0.0.1"
ATTEMPTS = 60
# A request is retried (on any replica) for this long before the run gives up.
GIVE_UP_SECONDS = 180.0


@dataclass
class Tally:
    turns: int = 0
    copies: int = 0
    inflight_retries: int = 0
    after_retries: int = 0
    failed_attempts: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    restarts: int = 0
    replica_kills: int = 0


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


class Replica:
    """One `compactor serve` process on a fixed port (so it can be started again)."""

    def __init__(self, code: Path, env: dict[str, str], log: Path) -> None:
        self.code, self.env, self.log = code, env, log
        self.port = _free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "app.cli", "serve", "--host", HOST]
        command += ["--port", str(self.port), "--log-level", "warning"]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, env=self.env, cwd=self.code, stdout=log, stderr=log
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"replica exited:\n{self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"replica not up in 60 s:\n{self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@contextmanager
def replicas(code: Path, database_url: str, upstream: str, work: Path) -> Iterator[list[Replica]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPACTOR_")}
    env["COMPACTOR_DATABASE_URL"] = database_url
    env["COMPACTOR_UPSTREAM_OPENAI_URL"] = f"{upstream}/v1"
    env["PYTHONPATH"] = str(code)
    subprocess.run(
        [sys.executable, "-m", "app.cli", "migrate"],
        env=env,
        cwd=code,
        check=True,
        capture_output=True,
        timeout=120,
    )
    env["COMPACTOR_AUTO_MIGRATE"] = "false"
    started = [Replica(code, env, work / f"replica-{i}.log") for i in (1, 2)]
    try:
        for replica in started:
            replica.start()
        yield started
    finally:
        for replica in started:
            replica.stop()


def slow_upstream(received: Received) -> Answer | None:
    """Every chat answer takes 0.2-0.8 s: copies of a request overlap in flight."""
    if not received.path.endswith("/chat/completions"):
        return None
    body = received.body if isinstance(received.body, dict) else {}
    turn = str(body.get("messages", [{}])[-1].get("content", ""))
    return Answer(
        json=chat_completion(f"answer to {turn}", prompt_size(body)),
        pause_seconds=random.uniform(0.2, 0.8),
    )


async def send(
    http: httpx.AsyncClient,
    urls: list[str],
    first: str,
    sid: str,
    body: dict[str, Any],
    tally: Tally,
) -> httpx.Response:
    """Sends `body` to `first`, then to any replica, until one answers it."""
    last = ""
    deadline = time.monotonic() + GIVE_UP_SECONDS
    url = first
    while time.monotonic() < deadline:
        tally.copies += 1
        try:
            answer = await http.post(
                f"{url}/v1/chat/completions",
                json=body,
                headers={"X-Compactor-Session": sid, "Authorization": "Bearer sk-bench"},
            )
        except httpx.TransportError as exc:
            tally.failed_attempts += 1
            last = repr(exc)
        else:
            tally.statuses[answer.status_code] += 1
            if answer.status_code == 200:
                return answer
            tally.failed_attempts += 1
            last = f"{answer.status_code} {answer.text[:300]}"
        await asyncio.sleep(random.uniform(0.1, 0.4))
        url = random.choice(urls)
    raise RuntimeError(f"session {sid}: unanswered for {GIVE_UP_SECONDS} s: {last}")


async def client(
    index: int,
    urls: list[str],
    turns: int,
    inflight: float,
    after: float,
    tally: Tally,
    sessions: dict[str, int],
) -> None:
    settings: dict[str, Any] = {"model": "gpt-4o"}
    if index % 2:
        settings |= {"trigger_tokens": 600, "keep_recent_tokens": 150}
    async with httpx.AsyncClient(timeout=60) as http:
        for _attempt in range(ATTEMPTS):
            try:
                made = await http.post(f"{random.choice(urls)}/sessions", json=settings)
                if made.status_code == 201:
                    break
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.3)
        sid = str(made.json()["id"])
        sessions[sid] = 0
        history: list[dict[str, Any]] = []
        for turn in range(turns):
            question = {
                "role": "user",
                "content": f"session {index} turn {turn}: "
                + " ".join(f"w{turn}x{j}" for j in range(40)),
            }
            body = {"model": "gpt-4o", "messages": [*history, question]}
            first, second = random.sample(urls, 2)
            copies = [asyncio.create_task(send(http, urls, first, sid, body, tally))]
            if random.random() < inflight:
                await asyncio.sleep(random.uniform(0.05, 0.4))
                tally.inflight_retries += 1
                copies.append(asyncio.create_task(send(http, urls, second, sid, body, tally)))
            answers = await asyncio.gather(*copies)
            if random.random() < after:
                tally.after_retries += 1
                await send(http, urls, random.choice(urls), sid, body, tally)
            reply = answers[0].json()["choices"][0]["message"]
            history += [question, {"role": "assistant", "content": reply["content"]}]
            tally.turns += 1
            sessions[sid] = turn + 1


def chaos(
    cluster_restart: Any, replica: Replica, every: float, stop: threading.Event, tally: Tally
) -> None:
    """Restarts PostgreSQL every `every` seconds; kills replica 2 once, mid-run."""
    killed = False
    while not stop.wait(every):
        cluster_restart()
        tally.restarts += 1
        if not killed and tally.restarts == 2:
            replica.kill()
            tally.replica_kills += 1
            replica.start()
            killed = True


def check(url: str, sessions: dict[str, int]) -> dict[str, int]:
    """Reads every transcript back; counts what is wrong with it."""
    found = Counter[str]()
    for sid, turns in sessions.items():
        page = httpx.get(f"{url}/sessions/{sid}/transcript", params={"limit": 1000}, timeout=30)
        messages = page.json()["messages"]
        users = [m["content"] for m in messages if m["role"] == "user"]
        roles = [m["role"] for m in messages]
        found["entries"] += len(messages)
        for turn in range(turns):
            count = sum(1 for text in users if f" turn {turn}: " in text)
            if count == 0:
                found["lost user turns"] += 1
            elif count > 1:
                found["duplicated user turns"] += count - 1
        replies = roles.count("assistant")
        found["lost replies"] += max(0, turns - replies)
        found["duplicated replies"] += max(0, replies - turns)
        if roles != ["user", "assistant"] * turns:
            found["transcripts out of order"] += 1
    return dict(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=12)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--inflight", type=float, default=0.5)
    parser.add_argument("--after", type=float, default=0.2)
    parser.add_argument("--restart-every", type=float, default=4.0)
    parser.add_argument("--code", type=Path, default=ROOT)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    random.seed(args.seed)
    tally = Tally()
    sessions: dict[str, int] = {}
    with ExitStack() as stack:
        # Kept: the replicas' logs are there when something went wrong.
        work = Path(tempfile.mkdtemp(prefix="bound-faults-"))
        print(f"replica logs: {work}", flush=True)
        cluster = stack.enter_context(restartable_cluster())
        upstream = stack.enter_context(FakeUpstream())
        upstream.responder = slow_upstream
        running = stack.enter_context(
            replicas(args.code.resolve(), cluster.url, upstream.base_url, work)
        )
        urls = [r.url for r in running]
        stop = threading.Event()
        breaker = threading.Thread(
            target=chaos, args=(cluster.restart, running[1], args.restart_every, stop, tally)
        )
        started = time.monotonic()
        breaker.start()

        async def drive() -> None:
            await asyncio.gather(
                *(
                    client(i, urls, args.turns, args.inflight, args.after, tally, sessions)
                    for i in range(args.sessions)
                )
            )

        try:
            asyncio.run(drive())
        finally:
            stop.set()
            breaker.join()
        elapsed = time.monotonic() - started
        found = check(urls[0], sessions)
    print(f"code: {args.code}")
    print(
        f"{args.sessions} sessions x {args.turns} turns in {elapsed:.1f} s: {tally.turns} turns "
        f"answered, {tally.copies} requests sent ({tally.inflight_retries} in-flight copies "
        f"on the other replica, {tally.after_retries} resent after the answer, "
        f"{tally.failed_attempts} failed and retried)"
    )
    print(f"faults: {tally.restarts} PostgreSQL restarts, {tally.replica_kills} replica SIGKILL")
    print(f"answers: {dict(sorted(tally.statuses.items()))}")
    wrong = {k: v for k, v in found.items() if k != "entries" and v}
    print(
        f"transcripts: {found.get('entries', 0)} entries; "
        + (
            ", ".join(f"{k}: {v}" for k, v in wrong.items())
            if wrong
            else "every turn recorded exactly once"
        )
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
