"""`compactor serve --workers 2` without COMPACTOR_STATE_KEY: the workers share one key made
at start, so a compaction item one worker wrote is accepted by the other (issue 21.5)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from tests.e2e.serve_process import serve

ROUND_TRIPS = 40
WINDOW = [
    {"role": "user", "content": "Read the failing test and tell me what it checks."},
    {"role": "assistant", "content": "It checks that the parser keeps trailing commas."},
]


def _worker_pids(metrics_dir: Path) -> set[int]:
    """The workers that answered: each writes its metrics to files named by its pid."""
    return {
        int(match.group(1))
        for path in metrics_dir.glob("*.db")
        if (match := re.search(r"_(\d+)\.db$", path.name))
    }


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {name.decode(): value.decode() for name, value in pairs}


def test_two_workers_accept_each_others_compaction_items(tmp_path: Path) -> None:
    env: dict[str, str | None] = {"COMPACTOR_STATE_KEY": None}
    with serve(tmp_path, "--workers", "2", env=env) as served:
        refused: list[str] = []
        for turn in range(ROUND_TRIPS):
            window = [*WINDOW, {"role": "user", "content": f"Turn {turn}: go on."}]
            # A new connection for each request, so either worker may take each one.
            compacted = httpx.post(
                f"{served.url}/v1/responses/compact",
                json={"model": "gpt-4o", "input": window},
                timeout=60,
            )
            assert compacted.status_code == 200, compacted.text
            output = compacted.json()["output"]
            assert output[-1]["type"] == "compaction"
            counted = httpx.post(
                f"{served.url}/v1/responses/input_tokens",
                json={"model": "gpt-4o", "input": [*output, {"role": "user", "content": "ok"}]},
                timeout=60,
            )
            if counted.status_code != 200:
                refused.append(counted.text)
        (metrics_dir,) = tmp_path.glob("compactor-metrics-*")
        workers = _worker_pids(metrics_dir)
        keys = {_environ(pid).get("COMPACTOR_STATE_KEY") for pid in workers}
        log = served.log_text()
    assert refused == [], f"{len(refused)} of {ROUND_TRIPS} items refused: {refused[:2]}"
    # Both workers answered (else the round trips proved nothing), with one shared key.
    assert len(workers) == 2, workers
    (key,) = keys
    assert key is not None and len(key) >= 32
    # The key is never logged; the warning says how to make one for several replicas.
    assert key not in log
    assert "COMPACTOR_STATE_KEY is not set" in log
    assert "compactor keygen" in log
    assert log.count("COMPACTOR_STATE_KEY is not set") == 1, log


def test_a_configured_state_key_is_used_as_given(tmp_path: Path) -> None:
    env: dict[str, str | None] = {"COMPACTOR_STATE_KEY": "configured-key-0123456789abcdef"}
    with serve(tmp_path, "--workers", "2", env=env) as served:
        for _ in range(6):
            assert httpx.get(f"{served.url}/healthz").status_code == 200
        (metrics_dir,) = tmp_path.glob("compactor-metrics-*")
        keys = {_environ(pid).get("COMPACTOR_STATE_KEY") for pid in _worker_pids(metrics_dir)}
        log = served.log_text()
    assert keys == {"configured-key-0123456789abcdef"}
    assert "COMPACTOR_STATE_KEY is not set" not in log
