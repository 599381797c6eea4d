"""Cost per task (SPEC §15): real transcripts replayed as agent sessions through the
service, billed by a fake upstream that applies the vendors' prompt-caching rules, in
dollars, against sending the same turns directly.

Each transcript with tool use (tests/data, then ../shared/transcripts) is replayed turn
by turn — every request resends the whole history so far, with Claude Code's
`cache_control` placement for Anthropic and a per-session `prompt_cache_key` for OpenAI
(bench/cost_agent.py) — in these modes:

  direct       straight to the billing fake (the baseline: what caching alone gives)
  transparent  through the service, `X-Compactor-Mode: transparent`
  session      through the service, bound with `X-Compactor-Session`
  session-clear  bound, the session's strategy `clear_tool_results` (keep 3, clearing at
               the threshold; no model call)
  session-auto   bound, the session's strategy `auto` (clear first, summarize if still over)
  clearing     Anthropic `context_management` clear_tool_uses_20250919 (keep 3, trigger 30k)
  compact      Anthropic `context_management` compact_20260112 (trigger 50k, the vendor's
               smallest)

The service runs for real (uvicorn on loopback, a fresh SQLite file per run) with the
agent's model given a 64k window through a models file (threshold 31,232), and either
the extractive summarizer (0 $) or a model summarizer: a second billing fake that
answers with a summary and bills its prompts by the same rules.

Every mode replays the same turns and gets the same replies (the transcript's own), so
output tokens match unless turns are refused. The clock is simulated: each turn advances
it by `--think-seconds` (the agent's think and tool time).

Run: .venv/bin/python bench/cost.py [--only fa812bfe,4d5611e5] [--summarizer both]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.main import create_app  # noqa: E402
from app.serving import NoDelayH11Protocol  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.tokenizers.bpe import TokenizerRegistry  # noqa: E402
from bench.common import serve_in_thread  # noqa: E402
from bench.cost_agent import (  # noqa: E402
    Transcript,
    anthropic_body,
    openai_body,
    reply_of,
    transcripts,
)
from tests.billing import BillingUpstream, Reply, SimulatedClock, summarizing  # noqa: E402
from tests.billing.prefixes import extends  # noqa: E402

WINDOW = 64_000
CLEAR_TRIGGER = 30_000
COMPACT_TRIGGER = 50_000
ANTHROPIC_HEADERS = {"x-api-key": "sk-ant-bench", "anthropic-version": "2023-06-01"}
OPENAI_HEADERS = {"authorization": "Bearer sk-bench"}
MODES = ("direct", "transparent", "session", "session-clear", "session-auto", "clearing", "compact")
# The session-bound modes and the strategy each session is created with.
SESSION_STRATEGIES = {
    "session": None,
    "session-clear": "clear_tool_results",
    "session-auto": "auto",
}
ANTHROPIC_ONLY = {"clearing", "compact"}


@dataclass
class Run:
    """What one mode cost on one transcript."""

    mode: str
    summarizer: str
    turns: int = 0
    refused: int = 0
    sent: int = 0
    uncached: int = 0
    written: int = 0
    read: int = 0
    output: int = 0
    dollars: float = 0.0
    prefix_changes: int = 0
    steady_read: int = 0  # on turns whose prefix did not change
    steady_sent: int = 0
    summarizer_calls: int = 0
    summarizer_tokens: int = 0
    summarizer_dollars: float = 0.0
    summarizer_read: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def hit_rate(self) -> float:
        return self.steady_read / self.steady_sent if self.steady_sent else 0.0

    @property
    def total_dollars(self) -> float:
        return self.dollars + self.summarizer_dollars


def models_file(folder: Path, transcript: Transcript) -> Path:
    """The agent's model with a 64k window; the summarizer's model keeps its own."""
    provider = "anthropic" if transcript.api == "anthropic" else "openai"
    entry = {
        "provider": provider,
        "context_window": WINDOW,
        "max_output_tokens": 16_384,
        "encoding": "o200k_base",
    }
    path = folder / "models.json"
    path.write_text(json.dumps({"models": {transcript.model: entry}}))
    return path


def summarizer_model(transcript: Transcript) -> str:
    return "claude-sonnet-4-5" if transcript.api == "anthropic" else "gpt-4o"


@contextmanager
def service(
    folder: Path,
    transcript: Transcript,
    upstream: BillingUpstream,
    summarizer: BillingUpstream | None,
    tokenizers: TokenizerRegistry,
) -> Iterator[str]:
    """The service in front of `upstream`, on loopback, with a fresh database."""
    extra: dict[str, Any] = {}
    if summarizer is not None:
        anthropic = transcript.api == "anthropic"
        extra = {
            "summarizer": "anthropic" if anthropic else "openai",
            "summarizer_base_url": summarizer.base_url if anthropic else summarizer.openai_base_url,
            "summarizer_model": summarizer_model(transcript),
            "summarizer_api_key": "sk-bench-summarizer",
        }
    settings = Settings(
        database_url=f"sqlite:///{folder / 'compactor.db'}",
        upstream_openai_url=upstream.openai_base_url,
        upstream_anthropic_url=upstream.base_url,
        models_file=models_file(folder, transcript),
        state_key="bench-state-key-" + "k" * 16,
        **extra,
    )
    app = create_app(settings, tokenizers=tokenizers)
    with serve_in_thread(app, http=NoDelayH11Protocol) as url:
        yield url


def account(run: Run, upstream: BillingUpstream, summarizer: BillingUpstream | None) -> None:
    """Fills `run` from what the fakes received and billed."""
    api = "messages" if upstream.bills and upstream.bills[0].api == "messages" else "chat"
    previous: Any = None
    for received, bill in zip(upstream.received, upstream.bills, strict=True):
        if bill.refused:
            run.refused += 1
            continue
        run.sent += bill.prompt_tokens
        run.uncached += bill.uncached
        run.written += bill.written
        run.read += bill.read
        run.output += bill.output
        run.dollars += bill.dollars
        # Steady: this request starts with the whole previous one (what a cache can read).
        steady = previous is not None and extends(api, previous, received.body)
        if previous is not None and not steady:
            run.prefix_changes += 1
        if steady:
            run.steady_read += bill.read
            run.steady_sent += bill.prompt_tokens
        previous = received.body
    if summarizer is not None:
        totals = summarizer.totals()
        run.summarizer_calls = totals.requests
        run.summarizer_tokens = totals.prompt_tokens + totals.output
        run.summarizer_dollars = totals.dollars
        run.summarizer_read = totals.read
        if totals.requests:
            run.notes.append(
                f"summarizer: {totals.requests} calls, {totals.read:,} of "
                f"{totals.prompt_tokens:,} prompt tokens read from its cache"
            )
        if totals.refused:
            run.notes.append(f"{totals.refused} summarizer calls refused")


class Agent:
    """Replays one transcript: a request per assistant message, whole history each time."""

    def __init__(self, transcript: Transcript, mode: str, http: httpx.Client, url: str) -> None:
        self.transcript = transcript
        self.mode = mode
        self.http = http
        self.url = url
        self.headers = dict(ANTHROPIC_HEADERS if transcript.api == "anthropic" else OPENAI_HEADERS)
        # Compaction blocks the service returned, by the assistant message they came with.
        self.blocks: dict[int, dict[str, Any]] = {}

    def start(self) -> None:
        if self.mode == "transparent":
            self.headers["x-compactor-mode"] = "transparent"
        if self.mode in ANTHROPIC_ONLY:
            self.headers["x-compactor-mode"] = "native"
            self.headers["anthropic-beta"] = "context-management-2025-06-27,compact-2026-01-12"
        if self.mode in SESSION_STRATEGIES:
            settings: dict[str, Any] = {
                "model": self.transcript.model,
                "format": self.transcript.api,
            }
            strategy = SESSION_STRATEGIES[self.mode]
            if strategy is not None:
                settings["strategy"] = strategy
            created = self.http.post(f"{self.url}/sessions", json=settings)
            created.raise_for_status()
            self.headers["x-compactor-session"] = created.json()["id"]

    def history(self, upto: int) -> list[dict[str, Any]]:
        """The messages before `upto`, with returned compaction blocks put back."""
        messages = self.transcript.messages[:upto]
        if not self.blocks:
            return messages
        messages = list(messages)
        for index, block in self.blocks.items():
            if index < upto:
                original = copy.deepcopy(messages[index])
                content = original["content"]
                if isinstance(content, str):
                    content = [{"type": "text", "text": content}]
                original["content"] = [block, *content]
                messages[index] = original
        return messages

    def body(self, upto: int) -> dict[str, Any]:
        history = self.history(upto)
        if self.transcript.api == "openai":
            return openai_body(self.transcript, history, f"bench-{self.transcript.name}")
        body = anthropic_body(self.transcript, history)
        if self.mode == "clearing":
            body["context_management"] = {
                "edits": [
                    {
                        "type": "clear_tool_uses_20250919",
                        "trigger": {"type": "input_tokens", "value": CLEAR_TRIGGER},
                        "keep": {"type": "tool_uses", "value": 3},
                    }
                ]
            }
        if self.mode == "compact":
            body["context_management"] = {
                "edits": [
                    {
                        "type": "compact_20260112",
                        "trigger": {"type": "input_tokens", "value": COMPACT_TRIGGER},
                    }
                ]
            }
        return body

    def turn(self, index: int) -> int:
        """Sends the request answered by message `index`; the HTTP status."""
        path = "/v1/messages" if self.transcript.api == "anthropic" else "/v1/chat/completions"
        answer = self.http.post(self.url + path, json=self.body(index), headers=self.headers)
        if answer.status_code == 200 and self.mode == "compact":
            content = answer.json().get("content") or []
            if content and content[0].get("type") == "compaction":
                self.blocks = {index: content[0]}
        return answer.status_code


def replay(
    transcript: Transcript,
    mode: str,
    summarizer_kind: str,
    think_seconds: float,
    tokenizers: TokenizerRegistry,
) -> Run:
    """One transcript in one mode; the fakes' bills made into a `Run`."""
    clock = SimulatedClock()
    replies: dict[str, Reply] = {}
    run = Run(mode, summarizer_kind)
    with (
        tempfile.TemporaryDirectory(prefix="bench-cost-") as tmp,
        BillingUpstream(clock, lambda received: replies["next"]) as upstream,
        BillingUpstream(clock, summarizing) as summarizer_fake,
        httpx.Client(timeout=300) as http,
    ):
        summarizer = summarizer_fake if summarizer_kind == "model" else None
        with _target(mode, Path(tmp), transcript, upstream, summarizer, tokenizers) as url:
            agent = Agent(transcript, mode, http, url)
            agent.start()
            for index in transcript.turns():
                replies["next"] = reply_of(transcript, transcript.messages[index])
                status = agent.turn(index)
                run.turns += 1
                if status != 200 and len(run.notes) < 3:
                    run.notes.append(f"turn {run.turns}: HTTP {status}")
                clock.advance(think_seconds)
        account(run, upstream, summarizer)
    return run


@contextmanager
def _target(
    mode: str,
    folder: Path,
    transcript: Transcript,
    upstream: BillingUpstream,
    summarizer: BillingUpstream | None,
    tokenizers: TokenizerRegistry,
) -> Iterator[str]:
    """Where the agent sends its requests: the fake itself, or the service before it."""
    if mode == "direct":
        yield upstream.base_url
        return
    with service(folder, transcript, upstream, summarizer, tokenizers) as url:
        yield url


def _k(tokens: int) -> str:
    return f"{tokens / 1000:,.0f}k" if tokens >= 10_000 else f"{tokens:,}"


def print_table(transcript: Transcript, runs: list[Run]) -> None:
    direct = next(r for r in runs if r.mode == "direct")
    print(
        f"\n{transcript.name}: {len(transcript.turns())} turns, {transcript.model} "
        f"(agent window {WINDOW:,})"
    )
    head = (
        f"  {'mode':<26}{'sent':>8}{'uncached':>10}{'write':>8}{'read':>8}{'hit':>7}"
        f"{'$/task':>9}{'summ tok':>10}{'summ $':>8}{'prefix Δ':>9}{'refused':>9}{'vs direct':>10}"
    )
    print(head)
    for run in runs:
        label = run.mode if run.summarizer == "none" else f"{run.mode} ({run.summarizer})"
        ratio = run.total_dollars / direct.total_dollars if direct.total_dollars else 0.0
        # Refused turns were never billed: a ratio would read as a saving.
        shown = f"{ratio:>9.2f}x" if not run.refused else f"{'refused':>10}"
        print(
            f"  {label:<26}{_k(run.sent):>8}{_k(run.uncached):>10}{_k(run.written):>8}"
            f"{_k(run.read):>8}{run.hit_rate:>7.1%}{run.total_dollars:>9.3f}"
            f"{_k(run.summarizer_tokens):>10}{run.summarizer_dollars:>8.3f}"
            f"{run.prefix_changes:>9}{run.refused:>5}/{run.turns:<3}{shown}"
        )
        for note in run.notes:
            print(f"  {'':<26}  {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated transcript name prefixes")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--summarizer", choices=("extractive", "model", "both"), default="both")
    parser.add_argument("--think-seconds", type=float, default=20.0)
    args = parser.parse_args()
    wanted = [w for w in args.only.split(",") if w]
    modes = [m for m in args.modes.split(",") if m]
    kinds = ["extractive", "model"] if args.summarizer == "both" else [args.summarizer]
    tokenizers = TokenizerRegistry()
    tokenizers.warm()
    for transcript in transcripts():
        if wanted and not any(transcript.name.startswith(w) for w in wanted):
            continue
        runs = []
        for mode in modes:
            if mode in ANTHROPIC_ONLY and transcript.api != "anthropic":
                continue
            # Direct and clearing never summarize: one run each.
            for kind in ["none"] if mode in ("direct", "clearing", "session-clear") else kinds:
                runs.append(replay(transcript, mode, kind, args.think_seconds, tokenizers))
        print_table(transcript, runs)


if __name__ == "__main__":
    main()
