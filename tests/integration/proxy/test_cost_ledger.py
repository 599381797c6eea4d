"""The cost ledger (SPEC §15, issue 22.7): a session's `GET /sessions/{id}/cost` says the
tokens the upstream billed, kind by kind, exactly as the vendor's usage reported them,
and the dollars at the registry's prices — for the proxied requests bound to it and for
its summary calls. The upstream and the summarizer are billing fakes that cache and bill
by the vendors' published rules; the ledger must equal what they billed."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from context_compactor import AsyncCompactorClient, CompactorClient, SessionCost

from app.settings import Settings
from tests.billing import Bill, BillingUpstream, Reply, SimulatedClock, summarizing
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
def summarizer() -> Iterator[BillingUpstream]:
    with BillingUpstream(SimulatedClock(), summarizing) as fake:
        yield fake


@pytest.fixture
def proxy_url(
    tmp_path: Path, upstream: BillingUpstream, summarizer: BillingUpstream
) -> Iterator[str]:
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
        summarizer="anthropic",
        summarizer_base_url=summarizer.base_url,
        summarizer_model="claude-sonnet-4-5",
        summarizer_api_key="sk-summarizer",
    )
    with live_service(settings) as url:
        yield url


def new_session(url: str, model: str, fmt: str) -> str:
    created = httpx.post(f"{url}/sessions", json={"model": model, "format": fmt})
    assert created.status_code == 201, created.text
    session: str = created.json()["id"]
    return session


def cost_of(url: str, session: str) -> dict[str, Any]:
    answer = httpx.get(f"{url}/sessions/{session}/cost")
    assert answer.status_code == 200, answer.text
    cost: dict[str, Any] = answer.json()
    return cost


def billed(bills: Sequence[Bill]) -> dict[str, int]:
    """What the fake billed, in the ledger's kinds."""
    return {
        "input_tokens": sum(b.uncached for b in bills),
        "cache_write_tokens": sum(b.written for b in bills),
        "cache_read_tokens": sum(b.read for b in bills),
        "output_tokens": sum(b.output for b in bills),
    }


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_bound_anthropic_session_costs_what_the_upstream_billed(
    proxy_url: str, upstream: BillingUpstream, summarizer: BillingUpstream, stream: bool
) -> None:
    session = new_session(proxy_url, CLAUDE, "anthropic")
    extra = {"stream": True} if stream else {}
    agent = CodingAgent(
        proxy_url, CLAUDE, {"x-compactor-session": session}, result_tokens=800, extra=extra
    )
    try:
        list(agent.turns(16))
    finally:
        agent.http.close()
    records = httpx.get(f"{proxy_url}/sessions/{session}/compactions").json()["compactions"]
    summaries = [r for r in records if r["summarizer"]["provider"] == "anthropic"]
    assert summaries, records
    assert all(b.status == 200 for b in upstream.bills)
    cost = cost_of(proxy_url, session)
    part = cost["upstream"]
    assert part["calls"] == len(upstream.bills) == 16
    assert part["tokens"] == billed(upstream.bills)
    # Claude Code's markers: most of it is cache reads, and the ledger says so.
    assert part["tokens"]["cache_read_tokens"] > part["tokens"]["input_tokens"]
    # The fake prices Sonnet 4.5 as Anthropic publishes it ($3/M, 1.25x, 0.1x, $15/M).
    assert part["cost_usd"]["total"] == pytest.approx(sum(b.dollars for b in upstream.bills))
    # The summarizer's share: its calls as the summarizer's provider billed them.
    summ = cost["summarizer"]
    # One entry per compaction, with every summary call it made.
    assert summ["calls"] == len(summaries)
    assert len(summarizer.bills) >= len(summaries)
    assert summ["tokens"] == billed(summarizer.bills)
    assert summ["tokens"]["input_tokens"] > 0
    # Its fixed instructions are written with the 1-hour TTL (2x): priced as billed.
    assert sum(b.write_1h for b in summarizer.bills) > 0
    assert summ["cost_usd"]["total"] == pytest.approx(sum(b.dollars for b in summarizer.bills))
    assert cost["total_cost_usd"] == pytest.approx(
        part["cost_usd"]["total"] + summ["cost_usd"]["total"]
    )
    # The turns after a compaction would have carried what it folded away.
    assert cost["uncompacted"]["folded_tokens"] > 0
    assert cost["uncompacted"]["cost_usd"] > part["cost_usd"]["total"]
    assert cost["saved_usd"] == pytest.approx(
        cost["uncompacted"]["cost_usd"] - cost["total_cost_usd"]
    )
    assert cost["unpriced_models"] == []
    # The Python clients read the same answer, typed.
    with CompactorClient(proxy_url) as client:
        typed = client.cost(session)
    assert typed.upstream.tokens.cache_read_tokens == part["tokens"]["cache_read_tokens"]
    assert typed.saved_usd == pytest.approx(cost["saved_usd"])

    async def read_async() -> SessionCost:
        async with AsyncCompactorClient(proxy_url) as client:
            return await client.cost(session)

    assert anyio.run(read_async).raw == cost
    # The inspector's page of the session says the same money.
    page = httpx.get(f"{proxy_url}/ui/sessions/{session}")
    assert page.status_code == 200, page.text
    section = page.text.split('<section id="cost">', 1)[1].split("</section>", 1)[0]
    assert f"${cost['total_cost_usd']:.4f}" in section
    assert f"${cost['saved_usd']:.4f}" in section


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_bound_openai_session_counts_cached_tokens_as_cache_reads(
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
    cost = cost_of(proxy_url, session)
    part = cost["upstream"]
    assert part["calls"] == 3
    assert part["tokens"] == billed(upstream.bills)
    assert part["tokens"]["cache_read_tokens"] >= 1024
    # gpt-4o: $2.50/M, cached input half of it, $10/M output.
    assert part["cost_usd"]["total"] == pytest.approx(sum(b.dollars for b in upstream.bills))
    assert cost["summarizer"]["calls"] == 0
    assert cost["uncompacted"]["folded_tokens"] == 0
    assert cost["saved_usd"] == pytest.approx(0.0)


def settled_metrics(url: str, summarizer: BillingUpstream) -> str:
    """The metrics once every summary call the fake billed is counted: a summary prepared
    ahead (SPEC §16) may still be on its way from the fake's reply to the ledger."""
    deadline = time.monotonic() + 30
    while True:
        text = httpx.get(f"{url}/metrics").text
        counted = metric(
            text,
            "compactor_upstream_tokens_total",
            kind="output",
            api="anthropic",
            source="summarizer",
        )
        if counted >= billed(summarizer.bills)["output_tokens"] or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        match = re.fullmatch(rf"{name}\{{(.*)\}} (\S+)", line)
        if match and ",".join(sorted(match.group(1).split(","))) == wanted:
            return float(match.group(2))
    return 0.0


def test_stateless_requests_and_their_summaries_are_counted_in_the_metrics(
    proxy_url: str, upstream: BillingUpstream, summarizer: BillingUpstream
) -> None:
    agent = CodingAgent(proxy_url, CLAUDE, result_tokens=800)
    try:
        compacted = sum(
            answer.headers.get("x-compactor-compacted") == "true" for answer in agent.turns(16)
        )
    finally:
        agent.http.close()
    assert compacted >= 1 and summarizer.bills
    text = settled_metrics(proxy_url, summarizer)
    kinds = {
        "input": "input_tokens",
        "cache_write": "cache_write_tokens",
        "cache_read": "cache_read_tokens",
        "output": "output_tokens",
    }
    for source, api, fake in (
        ("upstream", "messages", upstream),
        ("summarizer", "anthropic", summarizer),
    ):
        sums = billed(fake.bills)
        for kind, field_name in kinds.items():
            value = metric(
                text, "compactor_upstream_tokens_total", kind=kind, api=api, source=source
            )
            assert value == sums[field_name], (source, kind)
        dollars = metric(text, "compactor_cost_usd_total", api=api, source=source)
        assert dollars == pytest.approx(sum(b.dollars for b in fake.bills)), source
    # The tenant's ledger (stateless requests have no session) says the same.
    with CompactorClient(proxy_url) as client:
        tenant = client.tenant_cost()
    lines = {(line.source, line.api, line.model): line for line in tenant.lines}
    assert set(lines) == {
        ("upstream", "messages", CLAUDE),
        ("summarizer", "anthropic", "claude-sonnet-4-5"),
    }
    up, summ = (
        lines["upstream", "messages", CLAUDE],
        lines["summarizer", "anthropic", "claude-sonnet-4-5"],
    )
    assert up.calls == len(upstream.bills)
    assert up.tokens.cache_read_tokens == billed(upstream.bills)["cache_read_tokens"]
    assert summ.tokens.input_tokens == billed(summarizer.bills)["input_tokens"]
    everything = [*upstream.bills, *summarizer.bills]
    assert tenant.total_cost_usd == pytest.approx(sum(b.dollars for b in everything))


def test_the_cost_of_an_unknown_session_is_404(proxy_url: str) -> None:
    answer = httpx.get(f"{proxy_url}/sessions/00000000-0000-0000-0000-000000000000/cost")
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("application/problem+json")


def test_a_stateless_compact_bills_its_summary_to_the_tenant(
    proxy_url: str, summarizer: BillingUpstream
) -> None:
    messages = [
        {"role": role, "content": f"Turn {i}: " + " ".join(f"word{i}_{j}" for j in range(300))}
        for i, role in zip(range(12), ["user", "assistant"] * 6, strict=True)
    ]
    body = {"messages": messages, "model": CLAUDE, "force": True, "keep_recent_tokens": 500}
    answer = httpx.post(f"{proxy_url}/compact", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    assert summarizer.bills
    tenant = httpx.get(f"{proxy_url}/cost").json()
    (line,) = [item for item in tenant["lines"] if item["source"] == "summarizer"]
    assert line["tokens"] == billed(summarizer.bills)
    assert line["cost_usd"]["total"] == pytest.approx(sum(b.dollars for b in summarizer.bills))


def test_with_the_ledger_off_nothing_is_recorded(
    tmp_path: Path, upstream: BillingUpstream, summarizer: BillingUpstream
) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'off.db'}",
        upstream_anthropic_url=upstream.base_url,
        summarizer="anthropic",
        summarizer_base_url=summarizer.base_url,
        summarizer_model="claude-sonnet-4-5",
        summarizer_api_key="sk-summarizer",
        cost_ledger=False,
    )
    with live_service(settings) as url:
        session = new_session(url, CLAUDE, "anthropic")
        agent = CodingAgent(url, CLAUDE, {"x-compactor-session": session})
        try:
            list(agent.turns(2))
        finally:
            agent.http.close()
        assert len(upstream.bills) == 2
        assert cost_of(url, session)["upstream"]["calls"] == 0
        assert httpx.get(f"{url}/cost").json()["lines"] == []
        text = httpx.get(f"{url}/metrics").text
        assert "compactor_upstream_tokens_total{" not in text


def test_an_emulated_native_compaction_bills_its_summary_to_the_tenant(
    proxy_url: str, upstream: BillingUpstream, summarizer: BillingUpstream
) -> None:
    history: list[dict[str, Any]] = []
    for turn in range(12):
        text = f"Turn {turn}: " + " ".join(f"word{turn}_{j}" for j in range(400))
        history += [
            {"role": "user", "content": text},
            {"role": "assistant", "content": f"Done with turn {turn}."},
        ]
    history.append({"role": "user", "content": "Go on."})
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 2_000}}
    body = {
        "model": CLAUDE,
        "max_tokens": 256,
        "messages": history,
        "context_management": {"edits": [edit]},
    }
    upstream.reply = lambda received: Reply("Going on.", ())
    headers = {"x-api-key": "sk-ant-caller", "anthropic-version": "2023-06-01"}
    headers["x-compactor-mode"] = "native"
    answer = httpx.post(f"{proxy_url}/v1/messages", json=body, headers=headers, timeout=60)
    assert answer.status_code == 200, answer.text
    assert summarizer.bills
    tenant = httpx.get(f"{proxy_url}/cost").json()
    lines = {(item["source"], item["api"]): item for item in tenant["lines"]}
    assert lines["summarizer", "anthropic"]["tokens"] == billed(summarizer.bills)
    assert lines["upstream", "messages"]["tokens"] == billed(upstream.bills)
