"""`prepare` on a real agent transcript, in process: the before-turn hook that counts the
session's context and, over the threshold, compacts it and records the compaction.

The baseline, measured in the same run, is the same work without the store: a
stateless compaction of the same history (`CompactionService.compact`, what POST
/compact does). The ratio says what the session path adds on top of it (loading the
context, writing the record, and any counting it does again). An under-threshold
`prepare` is measured against one count of the same history.

Sessions live in a SQLite file in a temporary folder; the summarizer is the extractive
one (no model). The per-message count cache is warm in every measurement, as on a
running service, where each turn's `prepare` has counted the previous turn's history.

Run: .venv/bin/python bench/prepare.py [--sessions N]
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

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.composition import build_state  # noqa: E402
from app.services.history import CompactOptions, HistoryInput  # noqa: E402
from app.services.sessions.service import NewSession  # noqa: E402
from app.services.sessions.views import SessionSettings  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.migrate import upgrade  # noqa: E402

DATA = ROOT / "tests" / "data" / "claude_code"
TRANSCRIPT = DATA / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.openai.json"
TENANT = "bench"


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=15, help="compacting prepares to time")
    args = parser.parse_args()
    body = json.loads(TRANSCRIPT.read_text("utf-8"))
    messages: list[Any] = body["messages"]
    model = body.get("model", "gpt-4o")
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/prepare.db"
        upgrade(url)
        state = build_state(Settings(database_url=url))
        state.tokenizers.warm()
        try:
            anyio.run(_bench, state, messages, model, args.sessions)
        finally:
            state.close_store()


async def _bench(state: Any, messages: list[Any], model: str, sessions: int) -> None:
    service, estimation, compaction = state.sessions, state.estimation, state.compaction
    plain = HistoryInput(messages=messages, model=model)
    total = estimation.count(plain, parse_all=True).estimate.tokens
    # Over the threshold by a fifth of the history: every prepare below compacts.
    trigger = total * 4 // 5
    print(
        f"prepare benchmark: {len(messages)} messages of {TRANSCRIPT.name}, {total:,} tokens, "
        f"trigger_tokens {trigger:,}"
    )
    ids = []
    for _ in range(sessions + 2):
        view = service.create(
            TENANT, NewSession(model=model, settings=SessionSettings(trigger_tokens=trigger))
        )
        service.append(TENANT, view.id, messages, {})
        ids.append(view.id)

    compacting: list[float] = []
    for index, session_id in enumerate(ids):
        start = time.perf_counter()
        result = await service.prepare(TENANT, session_id)
        elapsed = time.perf_counter() - start
        assert result.compacted, result.reason
        if index >= 2:  # the first two warm the caches
            compacting.append(elapsed)
    after = result.view.counted.estimate.tokens

    history = HistoryInput(messages=messages, model=model, trigger_tokens=trigger)
    stateless: list[float] = []
    for index in range(sessions + 2):
        start = time.perf_counter()
        outcome = await compaction.compact(history, CompactOptions(trigger="auto"))
        elapsed = time.perf_counter() - start
        assert outcome.compacted
        if index >= 2:
            stateless.append(elapsed)

    # Under the threshold: the compacted sessions again, nothing left to compact.
    under: list[float] = []
    for session_id in ids[2:]:
        start = time.perf_counter()
        result = await service.prepare(TENANT, session_id)
        under.append(time.perf_counter() - start)
        assert not result.compacted
    context = service.context(TENANT, ids[-1]).context
    one_count: list[float] = []
    for _ in range(len(under)):
        start = time.perf_counter()
        estimation.count(context.history())
        one_count.append(time.perf_counter() - start)

    prepare_ms, stateless_ms = _median_ms(compacting), _median_ms(stateless)
    under_ms, count_ms = _median_ms(under), _median_ms(one_count)
    print(
        f"  prepare, compacting ({total:,} → {after:,} tokens) {prepare_ms:8.1f} ms  "
        f"({prepare_ms / stateless_ms:.2f}x a stateless compact of the same history "
        f"at {stateless_ms:.1f} ms)"
    )
    print(
        f"  prepare, under the threshold          {under_ms:8.1f} ms  "
        f"({under_ms / count_ms:.2f}x one count of the same context at {count_ms:.1f} ms)"
    )
    print(f"  medians of {len(compacting)} compacting and {len(under)} under-threshold prepares")


if __name__ == "__main__":
    main()
