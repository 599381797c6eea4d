"""App start-up benchmark: one lifespan run (start, /readyz, stop) with a fresh tokenizer
registry, against the same with one shared, already-warmed registry
(`create_app(..., tokenizers=registry)`, the seam a test suite uses).

Run: .venv/bin/python bench/app_start.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.tokenizers.bpe import TokenizerRegistry  # noqa: E402

RUNS = 5


def seconds_per_start(settings: Settings, **extra: Any) -> float:
    start = time.perf_counter()
    for _ in range(RUNS):
        with TestClient(create_app(settings, **extra)) as client:
            client.get("/readyz").raise_for_status()
    return (time.perf_counter() - start) / RUNS


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    settings = Settings(database_url=f"sqlite:///{folder / 'start.db'}")
    shared = TokenizerRegistry()
    shared.warm()
    fresh = seconds_per_start(settings)
    warmed = seconds_per_start(settings, tokenizers=shared)
    print(f"app start+stop, fresh tokenizers   {fresh * 1000:7.0f} ms  (baseline)")
    print(f"app start+stop, shared warmed      {warmed * 1000:7.0f} ms  ({fresh / warmed:.1f}x)")


if __name__ == "__main__":
    main()
