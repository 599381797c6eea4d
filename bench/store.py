"""Session-store benchmark: appends per second and `prepare` latency on a 300-message
session, on SQLite and on a throwaway PostgreSQL cluster, over real HTTP on loopback;
full-text search latency on a 10,000-entry session, and the append rate with the search
index against the same store with the index dropped (SPEC §17).

Baselines from the same run: a raw SQL INSERT loop with the same driver and durability
setting (appends), and an in-process estimate of the same context (prepare). On SQLite
the appends are measured twice, with `COMPACTOR_SQLITE_SYNCHRONOUS=FULL` (the default:
every commit synced, an acknowledged append survives a power loss) and `NORMAL` (synced
at checkpoints only), and their ratio printed.

Run: .venv/bin/python bench/store.py   (only the search part: --search)
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.main import build_state, create_app  # noqa: E402
from app.services.history import HistoryInput  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.database import create_db_engine  # noqa: E402
from app.store.migrate import upgrade  # noqa: E402
from app.store.search import pg_drop_statement, sqlite_drop_statements  # noqa: E402
from bench.common import serve_in_thread  # noqa: E402
from tests.postgres import server_bin_dir, throwaway_cluster  # noqa: E402

TRANSCRIPT = ROOT / "tests/data/claude_code/4d5611e5-241a-462a-8d15-5122611a9569.anthropic.json"
MESSAGES = 300  # the transcript has 298


def _raw_insert_rate(url: str, messages: list[Any], synchronous: Any = "FULL") -> float:
    """Baseline: one committed INSERT per message with the same driver, no service."""
    engine = create_db_engine(url, sqlite_synchronous=synchronous)
    with engine.begin() as db:
        db.execute(text("CREATE TABLE IF NOT EXISTS bench_raw (seq integer, message text)"))
    start = time.perf_counter()
    for seq, message in enumerate(messages):
        with engine.begin() as db:
            db.execute(
                text("INSERT INTO bench_raw VALUES (:seq, :message)"),
                {"seq": seq, "message": json.dumps(message)},
            )
    elapsed = time.perf_counter() - start
    engine.dispose()
    return len(messages) / elapsed


# A trigger above the history: prepare measures the no-compaction path.
SESSION = {"model": "claude-sonnet-4-5", "trigger_tokens": 1_000_000}


def _append_rate(client: httpx.Client, messages: list[Any]) -> tuple[str, float]:
    """A new session, one message per POST; its id and the appends per second."""
    sid: str = client.post("/sessions", json=SESSION).json()["id"]
    start = time.perf_counter()
    for message in messages:
        client.post(f"/sessions/{sid}/messages", json={"messages": [message]}).raise_for_status()
    return sid, len(messages) / (time.perf_counter() - start)


def bench_sqlite_durability(folder: str, messages: list[Any]) -> None:
    """Appends with every commit synced (FULL) against syncing at checkpoints (NORMAL)."""
    rates = {}
    for synchronous in ("NORMAL", "FULL"):
        url = f"sqlite:///{folder}/durability-{synchronous.lower()}.db"
        upgrade(url)
        app = create_app(Settings(database_url=url, sqlite_synchronous=synchronous))
        with serve_in_thread(app) as base, httpx.Client(base_url=base, timeout=60) as client:
            rates[synchronous] = _append_rate(client, messages)[1]
        raw = _raw_insert_rate(url, messages, synchronous)
        print(
            f"  appends, synchronous={synchronous:<6}       {rates[synchronous]:8.0f} /s   "
            f"(raw INSERT+COMMIT loop at {raw:.0f}/s)"
        )
    print(f"  FULL / NORMAL append rate            {rates['FULL'] / rates['NORMAL']:8.2f}x")


def bench_backend(label: str, url: str, messages: list[Any]) -> None:
    upgrade(url)
    app = create_app(Settings(database_url=url))
    with serve_in_thread(app) as base, httpx.Client(base_url=base, timeout=60) as client:
        sid, append_rate = _append_rate(client, messages)

        samples = []
        for _ in range(20):
            t = time.perf_counter()
            client.post(f"/sessions/{sid}/prepare").raise_for_status()
            samples.append(time.perf_counter() - t)
        prepare = statistics.median(samples)
        context = client.get(f"/sessions/{sid}/context").json()

        t = time.perf_counter()
        compacted = client.post(f"/sessions/{sid}/compact", json={}).json()
        compact_time = time.perf_counter() - t
        assert compacted["compacted"]

    # The same services the app built in its lifespan, built again in this process.
    state = build_state(Settings(database_url=url))
    state.tokenizers.warm()
    history = HistoryInput(messages=context["messages"], model="claude-sonnet-4-5")
    estimate_samples = []
    for _ in range(20):
        t = time.perf_counter()
        state.estimation.count(history)
        estimate_samples.append(time.perf_counter() - t)
    in_process = statistics.median(estimate_samples)
    raw_rate = _raw_insert_rate(url, messages)

    print(f"\n{label}")
    print(
        f"  appends, one message per POST      {append_rate:8.0f} /s   "
        f"({append_rate / raw_rate:.2f}x a raw INSERT+COMMIT loop at {raw_rate:.0f}/s)"
    )
    print(
        f"  prepare, {MESSAGES} messages, no compaction {prepare * 1000:6.1f} ms  "
        f"({prepare / in_process:.1f}x in-process estimate at {in_process * 1000:.1f} ms; "
        f"{context['estimate']['tokens']:,} tokens)"
    )
    print(
        f"  manual compact over HTTP (extractive) {compact_time * 1000:5.0f} ms  "
        f"({compacted['compaction']['tokens_before']:,} → "
        f"{compacted['compaction']['tokens_after']:,} tokens)"
    )


SEARCH_ENTRIES = 10_000
SEARCH_QUERIES = [
    "pytest",
    "def test",
    '"import json"',
    "config*",
    "error OR exception",
    "read -write",
    "bash",
    "function return value",
    "README",
    "zzzunmatched",
]
INDEX_ROUNDS = 3


def _drop_search_index(url: str) -> None:
    """The same store without its full-text index: FTS5 table and triggers, or the GIN."""
    engine = create_db_engine(url)
    with engine.begin() as db:
        statements = (
            [pg_drop_statement()] if url.startswith("postgresql") else (sqlite_drop_statements())
        )
        for statement in statements:
            db.execute(text(statement))
    engine.dispose()


def bench_search(label: str, database: Any, messages: list[Any]) -> None:
    """Search p50/p95 over HTTP on a 10,000-entry session; appends with the index against
    without it (fresh databases, alternated, the median of each)."""
    url = database("search")
    upgrade(url)
    app = create_app(Settings(database_url=url))
    with serve_in_thread(app) as base, httpx.Client(base_url=base, timeout=120) as client:
        sid = client.post("/sessions", json=SESSION).json()["id"]
        entries = [messages[i % len(messages)] for i in range(SEARCH_ENTRIES)]
        for start in range(0, SEARCH_ENTRIES, 500):
            batch = {"messages": entries[start : start + 500]}
            client.post(f"/sessions/{sid}/messages", json=batch).raise_for_status()
        for q in SEARCH_QUERIES:  # warm
            client.get(f"/sessions/{sid}/search", params={"q": q}).raise_for_status()
        samples = []
        for _ in range(5):
            for q in SEARCH_QUERIES:
                t = time.perf_counter()
                client.get(f"/sessions/{sid}/search", params={"q": q, "limit": 10})
                samples.append(time.perf_counter() - t)
        samples.sort()
        p50 = statistics.median(samples)
        p95 = samples[int(len(samples) * 0.95) - 1]
        health = []
        for _ in range(20):
            t = time.perf_counter()
            client.get("/healthz")
            health.append(time.perf_counter() - t)
    rates: dict[bool, list[float]] = {True: [], False: []}
    for round_ in range(INDEX_ROUNDS):
        for indexed in (True, False):
            url = database(f"append-{round_}-{'on' if indexed else 'off'}")
            upgrade(url)
            if not indexed:
                _drop_search_index(url)
            app = create_app(Settings(database_url=url))
            with serve_in_thread(app) as base, httpx.Client(base_url=base, timeout=60) as client:
                rates[indexed].append(_append_rate(client, messages)[1])
    with_index, without = statistics.median(rates[True]), statistics.median(rates[False])
    print(f"\n{label} search")
    print(
        f"  search, {SEARCH_ENTRIES:,} entries, {len(samples)} queries   p50 {p50 * 1000:6.1f} ms, "
        f"p95 {p95 * 1000:6.1f} ms  (GET /healthz p50 {statistics.median(health) * 1000:.1f} ms)"
    )
    print(
        f"  appends with the index {with_index:8.0f} /s, without {without:8.0f} /s: "
        f"{with_index / without:.2f}x  (median of {INDEX_ROUNDS} alternated runs)"
    )


def main() -> None:
    messages = json.loads(TRANSCRIPT.read_text("utf-8"))["messages"][:MESSAGES]
    print(f"session-store benchmark: {len(messages)} messages of {TRANSCRIPT.name}")
    with ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory())
        only_search = "--search" in sys.argv
        if not only_search:
            bench_backend("SQLite", f"sqlite:///{folder}/bench.db", messages)
            print("\nSQLite durability (the same appends, each setting in a new database)")
            bench_sqlite_durability(folder, messages)
        bench_search("SQLite", lambda name: f"sqlite:///{folder}/{name}.db", messages)
        if server_bin_dir() is None:
            print("\nPostgreSQL: server binaries not found, skipped")
            return
        server = stack.enter_context(throwaway_cluster())
        if not only_search:
            bench_backend("PostgreSQL", server, messages)
        bench_search("PostgreSQL", lambda name: _pg_database(server, name), messages)


def _pg_database(server: str, name: str) -> str:
    """A new database on the throwaway cluster; its URL."""
    import psycopg

    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "bench_{name.replace("-", "_")}"')
    return server.rsplit("/", 1)[0] + f"/bench_{name.replace('-', '_')}"


if __name__ == "__main__":
    main()
