"""Estimate and compact benchmarks on the real transcripts, as ratios against baselines
measured in the same process: raw tiktoken, in-process calls, and LiteLLM when installed.

Run: .venv/bin/python bench/estimate.py   (pip install -e '.[bench]' adds LiteLLM)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.counting.accounting import CountingRules, message_cost  # noqa: E402
from app.engine.counting.count_cache import TokenCountCache  # noqa: E402
from app.formats.registry import FORMATS  # noqa: E402
from app.main import build_state, create_app  # noqa: E402
from app.services.estimation import EstimationService  # noqa: E402
from app.services.history import CompactOptions, HistoryInput  # noqa: E402
from app.settings import Settings  # noqa: E402
from bench.common import measure, ms, serve_in_thread  # noqa: E402

DATA = ROOT / "tests" / "data" / "claude_code"
TRANSCRIPTS = {
    "openai": DATA / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.openai.json",
    "anthropic": DATA / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.anthropic.json",
}


def _row(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<52}{value:>14}  {note}")


def _litellm_counter() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from litellm import token_counter
    except ImportError:
        return None
    return token_counter


def bench_format(fmt: str, path: Path, state: Any, litellm_count: Any) -> None:
    body = json.loads(path.read_text("utf-8"))
    messages = body["messages"]
    model = "gpt-4o" if fmt == "openai" else body.get("model")
    tokenizers = state.tokenizers
    encoding = tokenizers.get("o200k_base")
    conversation = FORMATS.get(fmt).parse(messages)
    rules = CountingRules(dialect=FORMATS.get(fmt).dialect)
    texts = [t for m in conversation.messages for t in message_cost(m, rules).texts]
    file_text = json.dumps(messages, ensure_ascii=False)

    def fresh() -> EstimationService:
        return EstimationService(tokenizers, state.models, TokenCountCache(), 1200)

    history = HistoryInput(messages=messages, model=model)
    tokens = fresh().count(history).estimate.tokens
    print(f"\n{fmt}: {path.name} — {len(messages)} messages, {tokens:,} tokens estimated")
    print(f"  (the raw JSON text is {encoding.count(file_text):,} o200k tokens)")

    raw_texts = measure(lambda: [encoding.reference_count(t) for t in texts])
    raw_json = measure(lambda: encoding.reference_count(file_text))
    cold = measure(lambda: fresh().count(history))
    _row("raw tiktoken, same texts one by one (baseline)", ms(raw_texts))
    _row("raw tiktoken, whole JSON text (baseline)", ms(raw_json))
    _row(
        "cold estimate, empty cache",
        ms(cold),
        f"{cold / raw_texts:.2f}x texts, {cold / raw_json:.2f}x JSON (target <= 1.2x)",
    )

    warm_service = fresh()
    warm_service.count(history)
    grown = HistoryInput(messages=[*messages, {"role": "user", "content": "one more"}], model=model)
    warm = measure(lambda: warm_service.count(grown), repeat=50)
    _row(
        "re-estimate after appending one message",
        ms(warm),
        f"{warm / cold:.1%} of cold (target <= 5%)",
    )

    payload = orjson.dumps({"messages": messages, "model": model})
    cold_app = create_app(Settings(token_cache_entries=1))
    warm_app = create_app(Settings())
    with serve_in_thread(cold_app) as cold_url, serve_in_thread(warm_app) as warm_url:
        headers = {"content-type": "application/json"}
        with httpx.Client(timeout=60) as client:

            def post(url: str) -> None:
                response = client.post(f"{url}/estimate", content=payload, headers=headers)
                response.raise_for_status()

            http_cold = measure(lambda: post(cold_url))
            http_warm = measure(lambda: post(warm_url), repeat=30)
    in_process_warm = measure(lambda: warm_service.count(history), repeat=30)
    _row(
        "POST /estimate over HTTP, cold (no cache)",
        ms(http_cold),
        f"{http_cold / cold:.2f}x in-process cold (target <= 2x)",
    )
    _row(
        "POST /estimate over HTTP, warm",
        ms(http_warm),
        f"{http_warm / in_process_warm:.1f}x in-process warm ({ms(in_process_warm).strip()})",
    )

    compact_input = HistoryInput(messages=messages, model=model)

    def compact() -> None:
        outcome = asyncio.run(state.compaction.compact(compact_input, CompactOptions(force=True)))
        assert outcome.compacted

    compact_time = measure(compact, repeat=7)
    _row("extractive /compact in-process (warm cache)", ms(compact_time), "(target <= 300 ms)")

    if litellm_count is None:
        print("  LiteLLM not installed: pip install -e '.[bench]' to compare")
        return
    # What a user reaches for: LiteLLM with the history's own model name.
    litellm_model = model or "gpt-4o"
    litellm_time = measure(lambda: litellm_count(model=litellm_model, messages=messages), repeat=5)
    litellm_tokens = litellm_count(model=litellm_model, messages=messages)
    _row(
        f"LiteLLM token_counter({litellm_model})",
        ms(litellm_time),
        f"counts {litellm_tokens:,} tokens; recounts every call",
    )
    target = "5x" if fmt == "anthropic" else "1x"
    _row(
        "  our cold estimate vs LiteLLM",
        f"{litellm_time / cold:.1f}x faster",
        f"(target >= {target})",
    )
    _row(
        "  our re-estimate after one message vs LiteLLM",
        f"{litellm_time / warm:.0f}x faster",
        "(target >= 20x)",
    )


def main() -> None:
    state = build_state(Settings())
    state.tokenizers.warm()
    litellm_count = _litellm_counter()
    print("context-compactor estimate benchmark (medians; ratios from this same run)")
    for fmt, path in TRANSCRIPTS.items():
        bench_format(fmt, path, state, litellm_count)


if __name__ == "__main__":
    main()
