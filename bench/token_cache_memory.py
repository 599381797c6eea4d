"""Memory of one token-count cache entry (COMPACTOR_TOKEN_CACHE_ENTRIES, docs/configuration.md).

Fills a TokenCountCache with keys shaped like the estimation service's (tokenizer|rules
tag, serialized length, 64-bit hash) and prints the bytes tracemalloc sees per entry.

    .venv/bin/python bench/token_cache_memory.py [--entries 100000]
"""

from __future__ import annotations

import argparse
import random
import tracemalloc

from app.engine.counting.count_cache import TokenCountCache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=100_000)
    entries = parser.parse_args().entries
    tag = "o200k_base|chat-framing|ToolsRendering(...)|None|1200|1.0|()"
    rng = random.Random(1)
    tracemalloc.start()
    cache = TokenCountCache(entries)
    for i in range(entries):
        key = (tag, rng.randint(10, 100_000), hash(f"message {i}"))
        cache.put(key, (rng.randint(1, 5000) << 6) | 3)
    used, _ = tracemalloc.get_traced_memory()
    per_entry = used / entries
    default_mb = per_entry * 200_000 / 1e6
    print(f"{per_entry:.0f} bytes per entry; the default 200,000 entries ≈ {default_mb:.0f} MB")


if __name__ == "__main__":
    main()
