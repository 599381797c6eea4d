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

`--replicas 2`: two proxies on one SQLite file (the summary cache and the background
summaries' leases shared through it), the agent's turns sent to them in turn (a
round-robin load balancer); each line is measured with the leases (as deployed) and
without (`lease off`: each replica guards only its own background summaries, as before
the leases; the bench swaps the composition's lease store for none).

`--transcripts all` replays the other real Claude Code sessions of ../shared/transcripts
too (4d5611e5…, and its sub-agent's), one after the other, and sums the summarizer calls
over them: one transcript's ending (a summary prepared just before it ends) or its one
huge tool result should not decide the ratio. `--transcripts real` adds the OpenHands,
SWE-agent and swe_play transcripts (tests/real_transcripts.py), each replayed against a
window sized to it (`other_agents`). The summary line also says how many prepared summaries no
turn had used when their transcript ended. `--summaries 3` runs only the 3 s rows.
Each row also shows the service's prepared-ahead counters (/metrics: started, stored,
nothing to compact, wasted, ...).

`--trace` prints, by turn, each summarizer call and the service's compaction log lines
(a compaction with the summary cache's or a prepared summary, a prepared summary
stored, a compaction deferred): where each call of a run came from.

Run: .venv/bin/python bench/prepare_ahead.py [--scale 0.05] [--turns N] [--replicas 2]
     [--mode stateless|session|both] [--transcripts all|real] [--summaries 3,20] [--trace]
     [--ratios 0.8,0.9]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import app.composition  # noqa: E402
from app.engine.compaction.thresholds import CompactionSettings, compaction_threshold  # noqa: E402
from app.main import create_app  # noqa: E402
from app.services.proxy.ahead_leases import AheadLeases  # noqa: E402
from app.serving import NoDelayH11Protocol  # noqa: E402
from app.settings import Settings  # noqa: E402
from bench.common import serve_in_thread  # noqa: E402
from bench.proxy import upstream_app  # noqa: E402

DATA = ROOT / "tests" / "data" / "claude_code"
TRANSCRIPT = DATA / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.openai.json"
# The real Claude Code sessions of the shared transcripts (--transcripts all): the two
# long ones cross the threshold many times, the sub-agent's once or twice.
# `../shared` beside the checkout (a git worktree one level deeper: `../../shared`).
SHARED = next(
    (
        d / "shared" / "transcripts" / "claude_code"
        for d in (ROOT.parent, ROOT.parent.parent)
        if (d / "shared" / "transcripts").is_dir()
    ),
    ROOT.parent / "shared" / "transcripts" / "claude_code",
)
TRANSCRIPTS = {
    "fa812bfe": TRANSCRIPT,
    "4d5611e5": SHARED / "4d5611e5-241a-462a-8d15-5122611a9569.openai.json",
    "4d5611e5.agent": SHARED / "4d5611e5.agent-a2898e3.openai.json",
}
# The Claude Code sessions' window (threshold 34,000: 0.85 of it).
WINDOW = 40_000


@dataclass(frozen=True, slots=True)
class Replayed:
    """A transcript to replay, and the model window it is replayed against."""

    name: str
    messages: list[dict[str, Any]]
    window: int

    @property
    def reserve(self) -> int:
        return self.window // 10

    @property
    def threshold(self) -> int:
        """The service's threshold for this window and reserve (0.85 of the window)."""
        return compaction_threshold(CompactionSettings(self.window, self.reserve))


def claude_code(name: str) -> Replayed:
    messages = json.loads(TRANSCRIPTS[name].read_text())["messages"]
    return Replayed(name, messages, WINDOW)


def other_agents() -> list[Replayed]:
    """The OpenHands, SWE-agent and swe_play transcripts (--transcripts real), each with a
    window whose threshold the whole transcript crosses about two and a half times (as the
    Claude Code sessions cross theirs three to five times: they are 8k–65k tokens long, and
    a 40,000-token window would compact few of them), and at least four times what comes
    before the agent's first reply."""
    from tests import real_transcripts

    others = (
        *real_transcripts.openhands(),
        *real_transcripts.swe_agent(),
        *real_transcripts.swe_play(),
    )
    return [_sized(t.name, t.messages) for t in others]


def _sized(name: str, messages: list[dict[str, Any]]) -> Replayed:
    # About four characters a token: the window only has to be of the right size.
    tokens = len(orjson.dumps(messages)) // 4
    # What comes before the first reply (the task, a text-action agent's instructions) is
    # never folded; a threshold it filled most of would compact on every turn.
    first_reply = next(i for i, m in enumerate(messages) if m.get("role") == "assistant")
    opening = len(orjson.dumps(messages[:first_reply])) // 4
    threshold = max(4_000, int(tokens / 2.5), 4 * opening)
    window = -(-threshold * 100 // 85 // 500) * 500
    return Replayed(name.split("/", 1)[-1], messages, window)


SUMMARY = "## Goal\n- replay\n## Progress\n### Done\n- [x] turns\n## Next Steps\n1. go on"


class Trace:
    """What happened on each turn of a replay (--trace): the summarizer calls made while
    it was the agent's latest turn, and the service's compaction log lines."""

    def __init__(self) -> None:
        self.turn = -1
        self.calls: list[int] = []
        self.events: list[tuple[int, str, dict[str, Any]]] = []

    def handler(self) -> logging.Handler:
        trace = self

        class Capture(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                event = record.getMessage()
                if event in _TRACED:
                    fields = {k: record.__dict__.get(k) for k in _TRACED[event]}
                    trace.events.append((trace.turn, event, fields))

        return Capture(level=logging.INFO)


# The log lines a trace keeps, and which of their fields.
_TRACED = {
    "compaction": ("summarized_messages", "tokens_before", "tokens_after", "cached", "prepared"),
    "prepared_summary": ("summarized_messages", "tokens_before", "tokens_after"),
    "compaction_deferred": ("tokens", "prepared", "background"),
    "prepare_ahead_skipped": ("outcome",),
}


def summarizer_app(delay: float, calls: list[list[float]], trace: Trace | None = None) -> Any:
    """An OpenAI-compatible summarizer that answers after `delay` seconds; `calls` gets
    each call's start and end (monotonic)."""
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
        # Counted when it begins (a call cut short still happened); ended when answered.
        span = [time.monotonic(), float("inf")]
        calls.append(span)
        if trace is not None:
            trace.calls.append(trace.turn)
        await asyncio.sleep(delay)
        span[1] = time.monotonic()
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
        fields = ("role", "content", "tool_calls")
        message = {k: v for k, v in next_reply["message"].items() if k in fields}
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


def _no_leases(_store: Any, seconds: float) -> AheadLeases:
    return AheadLeases(None, seconds)


def replay(
    ratio: str,
    delay: float,
    think: float,
    turns: int,
    replicas: int = 1,
    lease: bool = True,
    mode: str = "stateless",
    transcript: Replayed | None = None,
    trace: Trace | None = None,
) -> dict[str, Any]:
    """One session replayed; per-turn latencies split into compacting and normal turns."""
    transcript = transcript or claude_code("fa812bfe")
    messages = transcript.messages
    calls: list[list[float]] = []
    next_reply: dict[str, Any] = {}
    upstream_of = transcript_upstream(next_reply) if mode == "session" else upstream_app
    with (
        tempfile.TemporaryDirectory() as tmp,
        serve_in_thread(summarizer_app(delay, calls, trace)) as summarizer,
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
            models={
                "gpt-4o": {
                    "context_window": transcript.window,
                    "reserve_tokens": transcript.reserve,
                }
            },
        )
        compacting: list[float] = []
        normal: list[float] = []
        states: dict[str, int] = {}
        turns_seen: list[tuple[int, str | None, str | None]] = []
        with contextlib.ExitStack() as stack:
            if trace is not None:
                logger = logging.getLogger("compactor")
                handler = trace.handler()
                logger.addHandler(handler)
                stack.callback(logger.removeHandler, handler)
                saved_level = logger.level
                logger.setLevel(logging.INFO)
                stack.callback(logger.setLevel, saved_level)
            if not lease:
                stack.enter_context(_patched(app.composition, "AheadLeases", _no_leases))
            proxies = [
                stack.enter_context(serve_in_thread(create_app(settings), http=NoDelayH11Protocol))
                for _ in range(replicas)
            ]
            client = stack.enter_context(httpx.Client(timeout=600))
            bound: dict[str, str] = {}
            if mode == "session":
                session = {"model": "gpt-4o", "format": "openai"}
                made = client.post(f"{proxies[0]}/sessions", json=session)
                bound = {"x-compactor-session": made.raise_for_status().json()["id"]}
            for turn, history in enumerate(requests_of(messages)[:turns]):
                next_reply["message"] = messages[len(history)]
                body = orjson.dumps({"model": "gpt-4o", "messages": history})
                proxy = proxies[turn % replicas]
                if trace is not None:
                    trace.turn = turn
                started = time.perf_counter()
                sent = time.monotonic()
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
                answered = time.monotonic()
                answer.raise_for_status()
                prepared = answer.headers.get("x-compactor-prepared")
                before = int(answer.headers.get("x-compactor-tokens-before") or 0)
                if prepared is not None:
                    states[prepared] = states.get(prepared, 0) + 1
                turns_seen.append((before, prepared, answer.headers.get("x-compactor-compacted")))
                # A compacting turn: the one whose history is over the threshold and that
                # either used/deferred a prepared summary or waited for a summarizer call
                # (one that began and ended while the turn was answered: inline).
                over = before > transcript.threshold
                waited = any(sent <= begun and ended <= answered for begun, ended in calls)
                fresh = prepared is not None or (over and waited)
                (compacting if fresh else normal).append(elapsed)
                time.sleep(think)
            # Background summaries still running count as made.
            time.sleep(delay * 1.5)
            outcomes = prepared_outcomes(client, proxies)
    if trace is not None:
        print_trace(trace, turns_seen)
    return {
        "compacting": compacting,
        "normal": normal,
        "calls": len(calls),
        "states": states,
        "outcomes": outcomes,
    }


def prepared_outcomes(client: httpx.Client, proxies: list[str]) -> dict[str, int]:
    """The prepared-ahead counters of every replica, summed (/metrics)."""
    totals: dict[str, int] = {}
    for proxy in proxies:
        for line in client.get(f"{proxy}/metrics").text.splitlines():
            if line.startswith("compactor_prepared_summaries_total{"):
                name = line.split('outcome="', 1)[1].split('"', 1)[0]
            elif line.startswith("compactor_prepared_wasted_total"):
                name = "wasted"
            else:
                continue
            totals[name] = totals.get(name, 0) + int(float(line.split()[-1]))
    return totals


def print_trace(trace: Trace, turns: list[tuple[int, str | None, str | None]]) -> None:
    """One line per turn on which the summarizer was called or something was logged."""
    by_turn: dict[int, list[str]] = {}
    for turn in trace.calls:
        by_turn.setdefault(turn, []).append("CALL")
    for turn, event, fields in trace.events:
        shown = " ".join(f"{k}={v}" for k, v in fields.items() if v not in (None, False))
        by_turn.setdefault(turn, []).append(f"{event}({shown})")
    for turn in sorted(by_turn):
        before, prepared, compacted = turns[turn] if 0 <= turn < len(turns) else (0, None, None)
        print(
            f"    turn {turn:>3} tokens {before:>6} prepared={prepared} compacted={compacted}: "
            + "; ".join(by_turn[turn]),
            file=sys.stderr,
        )


@contextlib.contextmanager
def _patched(module: Any, name: str, value: Any) -> Any:
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, saved)


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
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--mode", choices=("stateless", "session", "both"), default="both")
    parser.add_argument(
        "--summaries", default="3,20", help="Summary times in seconds (unscaled), comma-separated."
    )
    parser.add_argument(
        "--transcripts",
        default="fa812bfe",
        help=f"Comma-separated, of {', '.join(TRANSCRIPTS)}; or all (those three); or real "
        "(those three and the OpenHands, SWE-agent and swe_play transcripts).",
    )
    parser.add_argument(
        "--ratios",
        default="0.8",
        help="prepare_ahead_ratio values to measure against inline (off), comma-separated.",
    )
    parser.add_argument(
        "--trace", action="store_true", help="Each summarizer call and log line, by turn (stderr)."
    )
    args = parser.parse_args()
    modes = ("stateless", "session") if args.mode == "both" else (args.mode,)
    if args.transcripts in ("all", "real"):
        replayed = [claude_code(name) for name in TRANSCRIPTS]
        replayed += other_agents() if args.transcripts == "real" else []
    else:
        replayed = [claude_code(name) for name in args.transcripts.split(",")]
    think = 5.0 * args.scale
    print(
        f"scale {args.scale}: think {think:.3f} s (real sleep), times in ms (scaled), "
        f"{args.replicas} replica(s)"
    )
    # With replicas, prepare-ahead is measured with and without the leases.
    ratios = args.ratios.split(",")
    runs = [("off", True)] + [(ratio, True) for ratio in ratios]
    runs += [(ratio, False) for ratio in ratios] if args.replicas > 1 else []
    print(
        f"{'transcript':>24} {'mode':>9} {'summary':>8} {'ratio':>5} {'lease':>5} {'turns':>6} "
        f"{'compacting p50':>15} {'p99':>9} "
        f"{'normal p50':>11} {'added p50':>10} {'added p99':>10} "
        f"{'calls':>6}  states / prepared outcomes"
    )
    totals: dict[tuple[str, float, str, bool], tuple[int, int]] = {}
    for mode in modes:
        for seconds in (float(x) for x in args.summaries.split(",")):
            for transcript in replayed:
                for ratio, lease in runs:
                    calls, unused = report(transcript, mode, seconds, ratio, lease, think, args)
                    key = (mode, seconds, ratio, lease)
                    made, left = totals.get(key, (0, 0))
                    totals[key] = (made + calls, left + unused)
    if len(replayed) > 1:
        print("summarizer calls, every transcript:")
        for (mode, seconds, ratio, lease), (calls, unused) in totals.items():
            if ratio == "off":
                continue
            inline = totals[(mode, seconds, "off", True)][0]
            print(
                f"  {mode} {seconds:.0f}s ratio {ratio} lease {'on' if lease else 'off'}: "
                f"{inline} inline → {calls} ({(calls - inline) / inline:+.0%}); "
                f"{unused} of them prepared but not used yet when their transcript ended"
            )


def report(
    transcript: Replayed,
    mode: str,
    seconds: float,
    ratio: str,
    lease: bool,
    think: float,
    args: Any,
) -> tuple[int, int]:
    """One row: `mode` replayed with summaries of `seconds` (scaled) at `ratio`; its
    summarizer calls, and how many prepared summaries no turn had used (or replaced) when
    the transcript ended."""
    name = transcript.name
    delay = seconds * args.scale
    trace = Trace() if args.trace else None
    if trace is not None:
        print(f"  trace: {name} {mode} {seconds:.0f}s ratio {ratio}", file=sys.stderr)
    result = replay(ratio, delay, think, args.turns, args.replicas, lease, mode, transcript, trace)
    c50, c99 = pct(result["compacting"])
    n50, _ = pct(result["normal"])
    print(
        f"{name[:24]:>24} {mode:>9} {seconds:>7.0f}s {ratio:>5} {'on' if lease else 'off':>5} "
        f"{len(result['compacting']):>6} "
        f"{c50 * 1000:>15.1f} {c99 * 1000:>9.1f} {n50 * 1000:>11.1f} "
        f"{(c50 - n50) * 1000:>10.1f} {(c99 - n50) * 1000:>10.1f} "
        f"{result['calls']:>6}  "
        f"{result['states']} {result['outcomes'] or ''}",
        flush=True,
    )
    states, outcomes = result["states"], result["outcomes"]
    used = states.get("ready", 0) + states.get("waited", 0) + outcomes.get("wasted", 0)
    return int(result["calls"]), max(0, outcomes.get("stored", 0) - used)


if __name__ == "__main__":
    main()
