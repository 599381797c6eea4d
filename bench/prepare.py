"""`prepare` on a real agent transcript, in process: the before-turn hook that counts the
session's context and, over the threshold, compacts it and records the compaction.

The baseline, measured in the same run, is the same work without the store: a
stateless compaction of the same history (`CompactionService.compact`, what POST
/compact does). The ratio says what the session path adds on top of it: loading the
context, writing the record, and any counting it does again. An under-threshold
`prepare` is measured against one count of the same context.

The summarizer is a stand-in answering one fixed summary at once: with a model, that
call is waiting on the network, not work of this process, and the extractive
summarizer's own ~60 ms would hide the session path (`--extractive` uses it anyway).
Both wall time and CPU time of the process (all its threads) are reported; on a shared
machine the CPU time is the steadier of the two. Sessions live in a SQLite file in a
temporary folder; the per-message count cache is warm, as on a running service.

Run: .venv/bin/python bench/prepare.py [--sessions N] [--extractive]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.composition import build_state  # noqa: E402
from app.engine.extractive.summarizer import ExtractiveSummarizer  # noqa: E402
from app.engine.ports import SummarizerInfo, SummaryRequest, SummaryResult  # noqa: E402
from app.services.history import CompactOptions, HistoryInput  # noqa: E402
from app.services.sessions.service import NewSession  # noqa: E402
from app.services.sessions.views import SessionSettings  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.migrate import upgrade  # noqa: E402

DATA = ROOT / "tests" / "data" / "claude_code"
TRANSCRIPT = DATA / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.openai.json"
TENANT = "bench"
SUMMARY = "\n\n".join(
    f"## {section}\n- {section.lower()} of the session so far"
    for section in ("Goal", "Constraints & Preferences", "Progress", "Next Steps")
)


class FixedSummarizer:
    """A summarizer that answers at once (what a model call costs this process)."""

    info = SummarizerInfo(provider="bench", model="fixed")

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult(text=SUMMARY)


async def _timed(
    call: Callable[[], Awaitable[Any]], runs: int, check: Callable[[Any], None]
) -> tuple[float, float, float]:
    """Median wall, median CPU and least CPU milliseconds of `call` (the least is the
    steadiest on a busy machine); the first two runs warm up."""
    wall, cpu = [], []
    for index in range(runs + 2):
        start, start_cpu = time.perf_counter(), time.process_time()
        check(await call())
        if index >= 2:
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall) * 1000, statistics.median(cpu) * 1000, min(cpu) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=30, help="prepares timed per kind")
    parser.add_argument("--extractive", action="store_true", help="the extractive summarizer")
    args = parser.parse_args()
    body = json.loads(TRANSCRIPT.read_text("utf-8"))
    summarizer = ExtractiveSummarizer() if args.extractive else FixedSummarizer()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/prepare.db"
        upgrade(url)
        state = build_state(Settings(database_url=url), summarizer=summarizer)
        state.tokenizers.warm()
        try:
            anyio.run(_bench, state, body["messages"], body.get("model"), args.sessions)
        finally:
            state.close_store()


async def _bench(state: Any, messages: list[Any], model: str, runs: int) -> None:
    service, estimation, compaction = state.sessions, state.estimation, state.compaction
    total = estimation.count(HistoryInput(messages=messages, model=model)).estimate.tokens
    trigger = total * 4 // 5  # over the threshold by a fifth: every prepare compacts
    summarizer = compaction.summarizer.info.provider
    print(
        f"prepare benchmark: {len(messages)} messages of {TRANSCRIPT.name}, {total:,} "
        f"tokens, trigger_tokens {trigger:,}, summarizer {summarizer}"
    )
    settings = SessionSettings(trigger_tokens=trigger)
    fresh = []
    for _ in range(runs + 2):
        session = service.create(TENANT, NewSession(model=model, settings=settings))
        service.append(TENANT, session.id, messages, {})
        fresh.append(session.id)
    pending = list(fresh)

    def compacted(result: Any) -> None:
        assert result.compacted, result.reason

    def not_compacted(result: Any) -> None:
        assert not result.compacted

    prepare = await _timed(lambda: service.prepare(TENANT, pending.pop()), runs, compacted)
    history = HistoryInput(messages=messages, model=model, trigger_tokens=trigger)
    stateless = await _timed(
        lambda: compaction.compact(history, CompactOptions(trigger="auto")), runs, compacted
    )
    # The compacted sessions again: nothing left to compact.
    pending = list(fresh)
    under = await _timed(lambda: service.prepare(TENANT, pending.pop()), runs, not_compacted)
    context = service.context(TENANT, fresh[-1]).context.history()

    async def count() -> Any:
        return estimation.count(context)

    one_count = await _timed(count, runs, lambda _: None)

    def row(label: str, measured: tuple[float, ...], base: tuple[float, ...], of: str) -> None:
        wall, cpu, least = measured
        print(
            f"  {label:<29} wall {wall:6.1f} ms = {wall / base[0]:5.2f}x | CPU {cpu:5.1f} ms "
            f"= {cpu / base[1]:5.2f}x | least CPU {least:5.1f} ms = {least / base[2]:5.2f}x "
            f"{of} ({base[0]:.1f} / {base[1]:.1f} / {base[2]:.1f} ms)"
        )

    row("prepare, compacting", prepare, stateless, "a stateless compact")
    row("prepare, under the threshold", under, one_count, "one count of the context")
    print(f"  wall and CPU: medians of {runs} prepares of each kind, each on its own session")


if __name__ == "__main__":
    main()
