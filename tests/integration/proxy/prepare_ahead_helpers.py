"""What the prepare-ahead tests share: the user turns that grow a history, the service
configured with a loopback model summarizer, and the prepared-summary metrics."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from tests.integration.fake_providers import OpenAIFake
from tests.integration.fake_upstreams import FakeUpstream
from tests.integration.proxy.conftest import proxy_settings

STORED = 'compactor_prepared_summaries_total{outcome="stored"}'
STARTED = 'compactor_prepared_summaries_total{outcome="started"}'


def user_turn(i: int, words: int = 100) -> dict[str, Any]:
    return {"role": "user", "content": f"Turn {i}: " + " ".join(f"w{i}x{j}" for j in range(words))}


def ahead_settings(
    tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake, **more: Any
) -> Any:
    """The proxy in front of `upstream`, summarizing with `summarizer`, prepare-ahead at 0.8."""
    return proxy_settings(
        tmp_path,
        upstream,
        summarizer="openai",
        summarizer_base_url=f"{summarizer.base_url}/v1",
        summarizer_model="gpt-4o-mini",
        summarizer_api_key="sk-summarizer",
        **{"prepare_ahead_ratio": 0.8, **more},
    )


def _counted(url: str, metric: str) -> float:
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith(metric):
            return float(line.split()[-1])
    return 0.0


def stored(url: str) -> float:
    """How many prepared summaries (or compactions) the service has kept."""
    return _counted(url, STORED)


def started(url: str) -> float:
    """How many background summaries (or compactions) the service has started."""
    return _counted(url, STARTED)


class TurnClock:
    """The clock of the paces the service builds (`app.services.ahead_pace`), moved on by
    the test: an agent's turn takes as long as the test says, whatever the machine."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def until_stored(url: str, count: float) -> None:
    """Polls /metrics until `count` are kept (a safety limit only, never asserted on)."""
    deadline = time.monotonic() + 60
    while stored(url) < count:
        assert time.monotonic() < deadline, "nothing prepared was kept"
        time.sleep(0.05)
