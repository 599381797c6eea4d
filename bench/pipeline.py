"""The proxy's compacting turns, in process (issue 20.8, "count once"): a native Anthropic
`compact_20260112` request and a transparent Chat Completions compaction of the same real
transcript (extractive summarizer), each as a ratio to one full count of that history
(parse + count, the unit of work the pipeline used to repeat) measured in the same run.

Every timed run is a cold compaction: the summary cache is bypassed (a fresh tenant each
run), the per-message token cache is warm (as on a live proxy, where the history was
counted on earlier turns).

Run: .venv/bin/python bench/pipeline.py [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.formats.apis.chat_completions import CHAT_COMPLETIONS  # noqa: E402
from app.main import build_state  # noqa: E402
from app.services.history import HistoryInput  # noqa: E402
from app.services.proxy.call import ProxyCall, ProxyMode  # noqa: E402
from app.services.proxy.observer import NullProxyObserver  # noqa: E402
from app.services.proxy.report import ProxyReport  # noqa: E402
from app.services.proxy.transparent import TransparentCompactor  # noqa: E402
from app.settings import Settings  # noqa: E402
from bench.common import measure, ms  # noqa: E402

DATA = ROOT / "tests" / "data" / "claude_code"
NAME = "4d5611e5.agent-a2898e3"  # 66 messages, ~54k tokens
TRIGGER = 30_000
MODELS = {
    "models": {
        "bench-64k": {
            "provider": "openai",
            "context_window": 64_000,
            "max_output_tokens": 8192,
            "encoding": "o200k_base",
        }
    }
}


def _row(label: str, seconds: float, baseline: float) -> None:
    print(f"  {label:<44}{ms(seconds)}  {seconds / baseline:5.2f}x one count")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    anthropic = json.loads((DATA / f"{NAME}.anthropic.json").read_text())
    chat = json.loads((DATA / f"{NAME}.openai.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        models = Path(tmp) / "models.json"
        models.write_text(json.dumps(MODELS))
        settings = Settings(
            database_url=f"sqlite:///{tmp}/b.db", state_key="k" * 32, models_file=models
        )
        state = build_state(settings)
        from app.store.migrate import upgrade

        upgrade(settings.database_url)
        estimation = state.estimation
        tenants = (f"t{i}" for i in itertools.count())

        def one_count(body: dict[str, Any], fmt: str) -> None:
            estimation.count(
                HistoryInput(messages=body["messages"], format=fmt, model=body.get("model")),
                parse_all=True,
            )

        edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": TRIGGER}}
        native = state.native.anthropic

        def native_turn() -> None:
            body = {**copy.deepcopy(anthropic), "context_management": {"edits": [edit]}}
            edited = asyncio.run(native.apply(body, next(tenants)))
            assert edited.compaction is not None

        compactor = TransparentCompactor(
            estimation, state.compaction, state.summary_cache, NullProxyObserver()
        )
        chat_body = {**chat, "model": "bench-64k"}
        raw = json.dumps(chat_body).encode()

        def transparent_turn() -> None:
            call = ProxyCall(CHAT_COMPLETIONS, next(tenants), raw, [], ProxyMode.TRANSPARENT)
            assert call.body is not None
            forwarded = asyncio.run(compactor.apply(call, call.body, ProxyReport()))
            assert forwarded is not None

        print(f"compacting turns on {NAME} ({len(chat['messages'])} messages), extractive")
        base = measure(lambda: one_count(anthropic, "anthropic"), args.repeat, 2)
        print(f"  {'one count (parse + count), anthropic':<44}{ms(base)}")
        _row("native compact_20260112 request", measure(native_turn, args.repeat, 1), base)
        base = measure(lambda: one_count(chat, "openai"), args.repeat, 2)
        print(f"  {'one count (parse + count), openai':<44}{ms(base)}")
        _row("transparent compaction (64k window)", measure(transparent_turn, args.repeat, 1), base)
        state.close_store()


if __name__ == "__main__":
    main()
