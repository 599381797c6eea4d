"""Asynchronous compaction (SPEC §16): how long the caller waits for
`POST /sessions/{id}/compact` with `Prefer: respond-async` (the 202) against the same
compaction answered inline, with a summarizer that takes `--delay` seconds per call
(a real sleep in a loopback fake, OpenAI chat completions), and how long the job then
takes to be `done` (polled every 20 ms).

Each run is a fresh session of the real Claude Code transcript (tests/data/claude_code,
fa812bfe…) in a real uvicorn server with a temporary SQLite store; inline and async runs
alternate on the same server.

Run: .venv/bin/python bench/compaction_jobs.py [--delay 3] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.main import create_app  # noqa: E402
from app.serving import NoDelayH11Protocol  # noqa: E402
from app.settings import Settings  # noqa: E402
from bench.common import serve_in_thread  # noqa: E402
from bench.prepare_ahead import TRANSCRIPT, summarizer_app  # noqa: E402


def _session(client: httpx.Client, messages: list[dict[str, Any]]) -> str:
    session_id: str = client.post("/sessions", json={"model": "gpt-4o"}).json()["id"]
    client.post(f"/sessions/{session_id}/messages", json={"messages": messages})
    return session_id


def run(delay: float, runs: int) -> dict[str, Any]:
    messages = json.loads(TRANSCRIPT.read_text())["messages"]
    calls: list[float] = []
    inline: list[float] = []
    accepted: list[float] = []
    finished: list[float] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        serve_in_thread(summarizer_app(delay, calls)) as summarizer,
    ):
        settings = Settings(
            database_url=f"sqlite:///{tmp}/bench.db",
            summarizer="openai",
            summarizer_base_url=f"{summarizer}/v1",
            summarizer_model="gpt-4o-mini",
            summarizer_api_key="sk-bench",
        )
        app = create_app(settings)
        with (
            serve_in_thread(app, NoDelayH11Protocol) as url,
            httpx.Client(base_url=url, timeout=600) as client,
        ):
            for _ in range(runs):
                session_id = _session(client, messages)
                started = time.perf_counter()
                answer = client.post(f"/sessions/{session_id}/compact", json={})
                inline.append(time.perf_counter() - started)
                assert answer.status_code == 200, answer.text

                session_id = _session(client, messages)
                started = time.perf_counter()
                answer = client.post(
                    f"/sessions/{session_id}/compact",
                    json={},
                    headers={"Prefer": "respond-async"},
                )
                accepted.append(time.perf_counter() - started)
                assert answer.status_code == 202, answer.text
                location = answer.headers["location"]
                while client.get(location).json()["state"] in ("queued", "running"):
                    time.sleep(0.02)
                finished.append(time.perf_counter() - started)
                assert client.get(location).json()["state"] == "done"
    return {
        "delay_s": delay,
        "runs": runs,
        "summarizer_calls": len(calls),
        "inline_p50_s": round(statistics.median(inline), 3),
        "async_202_p50_s": round(statistics.median(accepted), 3),
        "async_done_p50_s": round(statistics.median(finished), 3),
        "202_vs_inline": round(statistics.median(accepted) / statistics.median(inline), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=3.0, help="Seconds per summary call.")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(run(args.delay, args.runs), indent=2))


if __name__ == "__main__":
    main()
