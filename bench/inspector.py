"""Inspector-page benchmark: `GET /ui/sessions/{id}` on the 298-entry session with five
compactions, over real HTTP on loopback (SQLite).

Baseline from the same run: `GET /sessions/{id}/context` of the same session, which reads
the store and counts the current context (the page reads the whole transcript, counts
every entry, diffs five summaries and renders).

Run: .venv/bin/python bench/inspector.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402
from bench.common import serve_in_thread  # noqa: E402
from tests.inspector_session import build_compacted_session  # noqa: E402

ROUNDS = 30


def _median_ms(client: httpx.Client, path: str) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        answer = client.get(path)
        times.append(time.perf_counter() - start)
        assert answer.status_code == 200, answer.text
    return statistics.median(times) * 1000


@contextmanager
def _client(settings: Settings) -> Iterator[httpx.Client]:
    with (
        serve_in_thread(create_app(settings)) as base,
        httpx.Client(base_url=base, timeout=120) as client,
    ):
        yield client


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(database_url=f"sqlite:///{Path(tmp) / 'bench.db'}")
        with _client(settings) as client:
            session = build_compacted_session(client)
        # A new app: an empty token-count cache, so the first page is cold.
        with _client(settings) as client:
            start = time.perf_counter()
            page = client.get(f"/ui/sessions/{session.id}")
            cold = (time.perf_counter() - start) * 1000
            assert page.status_code == 200
            context = _median_ms(client, f"/sessions/{session.id}/context")
            warm = _median_ms(client, f"/ui/sessions/{session.id}")
            later = _median_ms(client, f"/ui/sessions/{session.id}?page=6")
            listing = _median_ms(client, "/ui")
    entries, compactions = len(session.messages), len(session.compactions)
    print(f"session: {entries} entries, {compactions} compactions, page {len(page.text):,} bytes")
    print(f"GET /sessions/{{id}}/context (baseline)   {context:7.1f} ms")
    print(f"GET /ui/sessions/{{id}}, cold cache        {cold:7.1f} ms = {cold / context:.1f}x")
    print(f"GET /ui/sessions/{{id}}, warm              {warm:7.1f} ms = {warm / context:.1f}x")
    print(f"GET /ui/sessions/{{id}}?page=6, warm       {later:7.1f} ms = {later / context:.1f}x")
    print(f"GET /ui (sessions list)                  {listing:7.1f} ms = {listing / context:.1f}x")


if __name__ == "__main__":
    main()
