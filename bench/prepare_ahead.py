"""Prepared-ahead summaries (SPEC §16): the added latency of the turn that crosses the
threshold, against a normal turn, with `prepare_ahead_ratio` off (inline, the baseline,
measured in the same run) and at 0.8; and summarizer calls per session.

The real Claude Code transcript (tests/data/claude_code, fa812bfe…) is replayed turn by
turn through the proxy in transparent mode (stateless: the whole history every turn):
each request is the history up to an assistant message. Between turns the agent
"thinks" (a real sleep). The summarizer is a loopback HTTP fake (OpenAI chat
completions) that sleeps before answering; the upstream answers a fixed completion at
once. All three run in this process under real uvicorn servers.

Time is scaled down by --scale (default 0.05): a 3 s summary sleeps 0.15 s, a 20 s one
1 s, the agent's 5 s think time 0.25 s (the ratio of think time to summary time is
what decides ready or pending). Latencies are wall time as measured: the summarizer
waits in them are scaled (an inline compacting turn's added latency at full scale is
about its summary time more), the proxy's own work is not.

The model is gpt-4o with a 40,000-token window and a 4,000-token reserve from the
per-model policy (threshold 34,000): the transcript's ~141k tokens cross it many times.

With --mode session the same requests are bound to a stored session
(`X-Compactor-Session`): the service records each turn's new messages and forwards the
session's context; its compactions are the session's, prepared ahead per session.

Run: .venv/bin/python bench/prepare_ahead.py [--scale 0.05] [--turns N]
     [--mode stateless|session|both]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.main import create_app  # noqa: E402
from app.serving import NoDelayH11Protocol  # noqa: E402
from app.settings import Settings  # noqa: E402
from bench.common import serve_in_thread  # noqa: E402
from bench.proxy import upstream_app  # noqa: E402

DATA = ROOT / "tests" / "data" / "claude_code"
TRANSCRIPT = DATA / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.openai.json"
SUMMARY = "## Goal\n- replay\n## Progress\n### Done\n- [x] turns\n## Next Steps\n1. go on"


def summarizer_app(delay: float, calls: list[float]) -> Any:
    """An OpenAI-compatible summarizer that answers after `delay` seconds."""
    reply = orjson.dumps(
        {
            "id": "s",
            "object": "chat.completion",
            "created": 1,
            "model": "fake-summarizer",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": SUMMARY},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
        }
    )

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        calls.append(time.monotonic())
        await asyncio.sleep(delay)
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": reply})

    return app


def transcript_upstream(next_reply: dict[str, Any]) -> Any:
    """The upstream for session mode: it answers each request with the transcript's own
    next assistant message (a session records the reply, so a fixed "ok" would make its
    history another one than the agent's), and reports no usage (a made-up prompt count
    would anchor the session's estimate on it)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        message = {
            k: v for k, v in next_reply["message"].items() if k in ("role", "content", "tool_calls")
        }
        reply = orjson.dumps(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": 1,
                "model": "bench",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        )
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": reply})

    return app


def requests_of(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The agent's requests: the history up to each assistant message."""
    return [messages[:i] for i, m in enumerate(messages) if m.get("role") == "assistant" and i]


def replay(ratio: str, delay: float, think: float, turns: int, mode: str) -> dict[str, Any]:
    """One session replayed; per-turn latencies split into compacting and normal turns."""
    messages = json.loads(TRANSCRIPT.read_text())["messages"]
    calls: list[float] = []
    next_reply: dict[str, Any] = {}
    upstream_of = transcript_upstream(next_reply) if mode == "session" else upstream_app
    with (
        tempfile.TemporaryDirectory() as tmp,
        serve_in_thread(summarizer_app(delay, calls)) as summarizer,
        serve_in_thread(upstream_of, http=NoDelayH11Protocol) as upstream,
    ):
        settings = Settings(
            database_url=f"sqlite:///{Path(tmp) / 'compactor.db'}",
            upstream_openai_url=f"{upstream}/v1",
            summarizer="openai",
            summarizer_base_url=f"{summarizer}/v1",
            summarizer_model="fake-summarizer",
            summarizer_api_key="sk-bench",
            prepare_ahead_ratio=ratio if ratio == "off" else float(ratio),
            models={"gpt-4o": {"context_window": 40_000, "reserve_tokens": 4_000}},
        )
        compacting: list[float] = []
        normal: list[float] = []
        states: dict[str, int] = {}
        with (
            serve_in_thread(create_app(settings), http=NoDelayH11Protocol) as proxy,
            httpx.Client(timeout=600) as client,
        ):
            bound: dict[str, str] = {}
            if mode == "session":
                made = client.post(
                    f"{proxy}/sessions", json={"model": "gpt-4o", "format": "openai"}
                )
                bound = {"x-compactor-session": made.raise_for_status().json()["id"]}
            for history in requests_of(messages)[:turns]:
                next_reply["message"] = messages[len(history)]
                body = orjson.dumps({"model": "gpt-4o", "messages": history})
                started = time.perf_counter()
                answer = client.post(
                    f"{proxy}/v1/chat/completions",
                    content=body,
                    headers={
                        "content-type": "application/json",
                        "authorization": "Bearer x",
                        **bound,
                    },
                )
                elapsed = time.perf_counter() - started
                answer.raise_for_status()
                prepared = answer.headers.get("x-compactor-prepared")
                before = int(answer.headers.get("x-compactor-tokens-before") or 0)
                if prepared is not None:
                    states[prepared] = states.get(prepared, 0) + 1
                # A compacting turn: the one whose history is over the threshold and that
                # either summarized (inline) or used/deferred a prepared summary.
                over = before > 34_000
                fresh = prepared is not None or (ratio == "off" and over and calls_grew(calls))
                (compacting if fresh else normal).append(elapsed)
                time.sleep(think)
            # Background summaries still running count as made.
            time.sleep(delay * 1.5)
    return {"compacting": compacting, "normal": normal, "calls": len(calls), "states": states}


_seen = {"n": 0}


def calls_grew(calls: list[float]) -> bool:
    """True when the summarizer was called since the last look (inline compaction)."""
    grew = len(calls) > _seen["n"]
    _seen["n"] = len(calls)
    return grew


def pct(samples: list[float]) -> tuple[float, float]:
    if not samples:
        return float("nan"), float("nan")
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=0.05)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--mode", choices=("stateless", "session", "both"), default="both")
    args = parser.parse_args()
    modes = ("stateless", "session") if args.mode == "both" else (args.mode,)
    think = 5.0 * args.scale
    print(f"scale {args.scale}: think {think:.3f} s (real sleep), times in ms (scaled)")
    print(
        f"{'mode':>9} {'summary':>8} {'ratio':>5} {'turns':>6} {'compacting p50':>15} {'p99':>9} "
        f"{'normal p50':>11} {'added p50':>10} {'added p99':>10} "
        f"{'calls':>6}  states"
    )
    for mode in modes:
        for seconds in (3.0, 20.0):
            for ratio in ("off", "0.8"):
                report(mode, seconds, ratio, think, args)


def report(mode: str, seconds: float, ratio: str, think: float, args: Any) -> None:
    """One row: `mode` replayed with a summary of `seconds` (scaled) at `ratio`."""
    _seen["n"] = 0
    result = replay(ratio, seconds * args.scale, think, args.turns, mode)
    c50, c99 = pct(result["compacting"])
    n50, _ = pct(result["normal"])
    print(
        f"{mode:>9} {seconds:>7.0f}s {ratio:>5} {len(result['compacting']):>6} "
        f"{c50 * 1000:>15.1f} {c99 * 1000:>9.1f} {n50 * 1000:>11.1f} "
        f"{(c50 - n50) * 1000:>10.1f} {(c99 - n50) * 1000:>10.1f} "
        f"{result['calls']:>6}  "
        f"{result['states']}",
        flush=True,
    )


if __name__ == "__main__":
    main()
