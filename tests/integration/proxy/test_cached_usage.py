"""Usage with caching counts whole (issue 22.8): with Claude Code's markers nearly all input
is reported as cache reads and writes (`input_tokens` near zero); a session's estimate is
anchored on input + cache read + cache write + output, streamed (usage split across
`message_start` and `message_delta`) and not, Anthropic and OpenAI (`cached_tokens` are
part of `prompt_tokens`), and such a session compacts at its threshold."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.settings import Settings
from tests.billing import Bill, BillingUpstream, Reply, SimulatedClock
from tests.integration.live_server import live_service
from tests.integration.proxy.coding_agent import CodingAgent, ToolCalls

CLAUDE = "claude-sonnet-4-5-20250929"
GPT = "gpt-4o-2024-08-06"
WINDOW = 12_000  # threshold 10,200


@pytest.fixture
def upstream() -> Iterator[BillingUpstream]:
    with BillingUpstream(SimulatedClock(), ToolCalls()) as fake:
        yield fake


@pytest.fixture
def proxy_url(tmp_path: Path, upstream: BillingUpstream) -> Iterator[str]:
    models = tmp_path / "models.json"
    entry = {"context_window": WINDOW, "max_output_tokens": 4096, "encoding": "o200k_base"}
    models.write_text(
        json.dumps(
            {
                "models": {
                    CLAUDE: {**entry, "provider": "anthropic"},
                    GPT: {**entry, "provider": "openai"},
                }
            }
        )
    )
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
        upstream_anthropic_url=upstream.base_url,
        upstream_openai_url=f"{upstream.base_url}/v1",
        models_file=models,
    )
    with live_service(settings) as url:
        yield url


def new_session(url: str, model: str, fmt: str) -> str:
    created = httpx.post(f"{url}/sessions", json={"model": model, "format": fmt})
    assert created.status_code == 201, created.text
    session: str = created.json()["id"]
    return session


def estimate_of(url: str, session: str) -> dict[str, Any]:
    answer = httpx.get(f"{url}/sessions/{session}/context")
    assert answer.status_code == 200, answer.text
    estimate: dict[str, Any] = answer.json()["estimate"]
    return estimate


def whole(bill: Bill) -> int:
    """Every token the reply's usage reports: uncached + cache read + cache write + output."""
    return bill.prompt_tokens + bill.output


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_anthropic_session_anchors_on_cache_reads_and_writes(
    proxy_url: str, upstream: BillingUpstream, stream: bool
) -> None:
    session = new_session(proxy_url, CLAUDE, "anthropic")
    extra = {"stream": True} if stream else {}
    agent = CodingAgent(proxy_url, CLAUDE, {"x-compactor-session": session}, extra=extra)
    try:
        for _ in agent.turns(4):
            last = upstream.bills[-1]
            # Claude Code's markers: the input is almost all cache read and write.
            assert last.uncached < 0.05 * last.prompt_tokens, last
            estimate = estimate_of(proxy_url, session)
            assert estimate["method"].startswith("usage+"), estimate
            assert estimate["tokens"] == whole(last)
    finally:
        agent.http.close()
    assert upstream.bills[-1].read > 0


def test_an_anthropic_session_with_cached_input_compacts_at_its_threshold(
    proxy_url: str, upstream: BillingUpstream
) -> None:
    session = new_session(proxy_url, CLAUDE, "anthropic")
    agent = CodingAgent(proxy_url, CLAUDE, {"x-compactor-session": session}, result_tokens=800)
    compacted_at = None
    try:
        for turn, answer in enumerate(agent.turns(14)):
            if answer.headers.get("x-compactor-compacted") == "true":
                compacted_at = turn
                assert int(answer.headers["x-compactor-tokens-before"]) > 10_200
                break
    finally:
        agent.http.close()
    assert compacted_at is not None
    # Up to the compaction every turn was under the threshold by the upstream's own count
    # (the estimate did not collapse to input_tokens and let the context grow past it).
    before = upstream.bills[compacted_at - 1]
    assert whole(before) <= 10_200 + 1_200


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_openai_session_anchors_on_prompt_tokens_with_cached_ones(
    proxy_url: str, upstream: BillingUpstream, stream: bool
) -> None:
    session = new_session(proxy_url, GPT, "openai")
    long_task = "Refactor the parser. " + " ".join(f"detail{i}" for i in range(1_500))
    messages: list[dict[str, Any]] = [{"role": "user", "content": long_task}]
    headers = {"authorization": "Bearer sk-caller", "x-compactor-session": session}
    upstream.reply = lambda received: Reply("Done.", ())
    with httpx.Client(timeout=60) as http:
        for turn in range(3):
            body: dict[str, Any] = {"model": GPT, "messages": messages, "prompt_cache_key": "k"}
            if stream:
                body |= {"stream": True, "stream_options": {"include_usage": True}}
            answer = http.post(f"{proxy_url}/v1/chat/completions", json=body, headers=headers)
            assert answer.status_code == 200, answer.text
            messages = [
                *messages,
                {"role": "assistant", "content": "Done."},
                {"role": "user", "content": f"Next step {turn}."},
            ]
            last = upstream.bills[-1]
            estimate = estimate_of(proxy_url, session)
            assert estimate["method"].startswith("usage+"), estimate
            assert estimate["tokens"] == whole(last)
    assert upstream.bills[-1].read > 1_024
