"""SIGTERM while a summary is being prepared in the background (SPEC §16): `compactor
serve` stops cleanly, the background summarizer call is cancelled (the summarizer sees
the connection close), nothing was stored for it, its lease was given up, and after a
restart the next turn compacts normally."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import free_port
from tests.integration.fake_providers import OpenAIFake, Reply
from tests.integration.fake_upstreams import FakeUpstream

MODEL = "gpt-4"  # threshold 6,963; soft threshold 5,570 at 0.8


def user_turn(i: int) -> dict[str, Any]:
    return {"role": "user", "content": f"Turn {i}: " + " ".join(f"w{i}x{j}" for j in range(100))}


def _serve(tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake, ratio: str) -> Any:
    port = free_port()
    env = {
        **os.environ,
        "COMPACTOR_DATABASE_URL": f"sqlite:///{tmp_path / 'compactor.db'}",
        "COMPACTOR_UPSTREAM_OPENAI_URL": f"{upstream.base_url}/v1",
        "COMPACTOR_SUMMARIZER": "openai",
        "COMPACTOR_SUMMARIZER_BASE_URL": f"{summarizer.base_url}/v1",
        "COMPACTOR_SUMMARIZER_MODEL": "gpt-4o-mini",
        "COMPACTOR_SUMMARIZER_API_KEY": "sk-summarizer",
        "COMPACTOR_PREPARE_AHEAD_RATIO": ratio,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, "compactor serve exited at start"
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "compactor serve did not start"
        time.sleep(0.1)


def _post(url: str, history: list[dict[str, Any]]) -> httpx.Response:
    answer = httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": MODEL, "messages": history},
        headers={"authorization": "Bearer sk-upstream"},
        timeout=60,
    )
    answer.raise_for_status()
    return answer


def test_sigterm_cancels_the_background_summary_and_the_next_turn_compacts(
    tmp_path: Path,
) -> None:
    with FakeUpstream() as upstream, OpenAIFake() as summarizer:
        # The background summary never answers: it is in flight when SIGTERM comes.
        summarizer.script(Reply.slow())
        process, url = _serve(tmp_path, upstream, summarizer, "0.8")
        try:
            history: list[dict[str, Any]] = []
            for turn in range(40):
                history.append(user_turn(turn))
                tokens = int(_post(url, history).headers["x-compactor-tokens-before"])
                history.append({"role": "assistant", "content": "ok"})
                if tokens > 5_570:
                    break
            assert summarizer.request_arrived.wait(30), "no background summary started"
            process.send_signal(signal.SIGTERM)
            _, errors = process.communicate(timeout=60)
            # uvicorn re-raises the signal it caught once it has shut down cleanly.
            assert process.returncode in (0, -signal.SIGTERM), errors[-2000:]
            assert b"Traceback" not in errors, errors[-2000:]
            assert summarizer.client_hung_up.wait(10), "the background call was not cancelled"
            # The conversation's lease was given up, not left to run out: another replica
            # (or this one restarted) may prepare its summary at once.
            with sqlite3.connect(tmp_path / "compactor.db") as db:
                assert db.execute("SELECT count(*) FROM leases").fetchone() == (0,)
        finally:
            if process.poll() is None:
                process.kill()
        # Restarted with compaction inline: nothing of the cancelled summary is in the
        # summary cache, so the turn over the threshold summarizes (and compacts) itself.
        calls = len(summarizer.received)
        process, url = _serve(tmp_path, upstream, summarizer, "off")
        try:
            while True:
                history.append(user_turn(len(history)))
                answer = _post(url, history)
                history.append({"role": "assistant", "content": "ok"})
                if int(answer.headers["x-compactor-tokens-before"]) > 6_963:
                    break
            assert answer.headers["x-compactor-compacted"] == "true"
            assert len(summarizer.received) == calls + 1
        finally:
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=60)
