"""A large compaction does not hold the event loop: /healthz answers while it runs.

No timing thresholds: the probe asks /healthz and then /metrics, and the compaction
counter must still read zero, i.e. both were answered before the compaction finished.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson

from app.settings import Settings
from tests.conftest import BIG_OPENAI, load_json
from tests.live_server import live_server

PROBES = 10
CHUNK = 1 << 20


def _large_compaction_body() -> bytes:
    """~30 MB: a real transcript's conversation repeated after its system prompt."""
    body = load_json(BIG_OPENAI)
    messages = body["messages"]
    system = [m for m in messages if m.get("role") in ("system", "developer")]
    rest = [m for m in messages if m.get("role") not in ("system", "developer")]
    return orjson.dumps({"messages": system + rest * 50, "model": body["model"], "force": True})


def _compactions(metrics: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("compactor_compactions_total{")
    )


def test_healthz_answers_while_a_large_compaction_runs(tmp_path: Path) -> None:
    payload = _large_compaction_body()
    assert len(payload) > 25_000_000
    sent = threading.Event()

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(payload), CHUNK):
            yield payload[start : start + CHUNK]
        sent.set()

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'loop.db'}")
    with live_server(settings) as url, httpx.Client(base_url=url, timeout=300) as probe:
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(
                httpx.post,
                f"{url}/compact",
                content=chunks(),
                headers={"content-type": "application/json"},
                timeout=300,
            )
            assert sent.wait(timeout=120)
            for _ in range(PROBES):
                assert probe.get("/healthz").status_code == 200
                assert _compactions(probe.get("/metrics").text) == 0, (
                    "/healthz waited for the compaction: it held the event loop"
                )
            answer = pending.result()
        assert answer.status_code == 200, answer.text[:500]
        assert answer.json()["compacted"] is True
        assert _compactions(probe.get("/metrics").text) == 1
