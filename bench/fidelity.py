"""Fidelity over many compactions, and what tool-result clearing saves on real transcripts.

Part 1 runs the scenario of tests/fidelity_scenario.py: facts of five kinds planted early,
then 10 rounds of unrelated work, each ending in a forced compaction. It prints, after each
round, the share of each kind still present verbatim in the history, for the extractive
summarizer and for a model that forgets everything it can, without and with caller pins.

Part 2 clears tool results (strategy clear_tool_results, default settings) on the real
Claude Code transcripts in both wire formats and prints the tokens before and after.

Run: .venv/bin/python bench/fidelity.py
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.main import build_state  # noqa: E402
from app.services.compaction import CompactionService  # noqa: E402
from app.services.history import CompactOptions, HistoryInput  # noqa: E402
from app.settings import Settings  # noqa: E402
from tests.fidelity_scenario import (  # noqa: E402
    AUTO_PINNED,
    CALLER_PINS,
    KINDS,
    ForgetfulSummarizer,
    run_rounds,
)

ROUNDS = 10
TRANSCRIPTS = ROOT / "tests" / "data" / "claude_code"


def print_fidelity(name: str, service: CompactionService, pins: Sequence[str]) -> None:
    results = asyncio.run(run_rounds(service, ROUNDS, pins))
    pinned = [k for k in KINDS if k in AUTO_PINNED or pins]
    print(f"\n{name}, {'caller pins facts and goals' if pins else 'no caller pins'}")
    print(f"  pinned kinds: {', '.join(pinned)}")
    header = "".join(f"{kind:>13}" for kind in KINDS)
    print(f"  {'round':>5}{header}{'tokens after':>14}{'restored':>10}")
    for r in results:
        cells = "".join(f"{r.survival[kind]:>12.0%} " for kind in KINDS)
        print(f"  {r.number:>5}{cells}{r.tokens_after:>14,}{r.restored:>10}")


def print_clearing(extractive: CompactionService) -> None:
    print("\ntool-result clearing on the real transcripts (keep 3, force, no model call)")
    print(f"  {'transcript':<54}{'before':>10}{'after':>10}{'saved':>8}{'cleared':>9}")
    for path in sorted(TRANSCRIPTS.glob("*.json")):
        body = json.loads(path.read_text("utf-8"))
        history = HistoryInput(messages=body["messages"], model=body.get("model"))
        options = CompactOptions(force=True, strategy="clear_tool_results")
        outcome = asyncio.run(extractive.compact(history, options))
        after = outcome.tokens_after if outcome.compacted else outcome.tokens_before
        assert after is not None
        saved = 1 - after / outcome.tokens_before
        print(
            f"  {path.name:<54}{outcome.tokens_before:>10,}{after:>10,}{saved:>8.0%}"
            f"{len(outcome.cleared):>9}"
        )


def main() -> None:
    state = build_state(Settings(summarizer="extractive"))
    state.tokenizers.warm()
    extractive = state.compaction
    forgetful = CompactionService(extractive.estimation, ForgetfulSummarizer())
    print(f"fidelity: share of planted facts present verbatim after each of {ROUNDS} rounds")
    for name, service in (("extractive summarizer", extractive), ("forgetful model", forgetful)):
        for pins in ((), CALLER_PINS):
            print_fidelity(name, service, pins)
    print_clearing(extractive)


if __name__ == "__main__":
    main()
