"""Summarizer calls are cacheable (SPEC §15, issue 22.4): fixed instructions first and
byte-identical, the previous summary next, the new conversation last; the provider's
cache reports come back in the summarizer's usage. The provider is the billing fake,
which caches and bills by the vendors' rules."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine.compaction.prompts import SUMMARIZER_SYSTEM_PROMPT, SUMMARY_CACHE_KEY
from app.main import create_app
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry
from tests.billing import BillingUpstream, SimulatedClock, summarizing
from tests.billing.anthropic_cache import MAX_BREAKPOINTS
from tests.conftest import CLAUDE_CODE, load_json

SESSION = "fa812bfe-b295-4cca-9c2f-fdf01028cb46"


@pytest.fixture
def fake() -> Iterator[BillingUpstream]:
    with BillingUpstream(reply=summarizing) as server:
        yield server


@contextmanager
def summarizing_with(
    fake: BillingUpstream, wire: str, tmp_path: Path, tokenizers: TokenizerRegistry
) -> Iterator[TestClient]:
    anthropic = wire == "anthropic"
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
        summarizer="anthropic" if anthropic else "openai",
        summarizer_base_url=fake.base_url if anthropic else fake.openai_base_url,
        summarizer_model="claude-sonnet-4-5" if anthropic else "gpt-4o",
        summarizer_api_key="sk-summarizer",
    )
    with TestClient(create_app(settings, tokenizers=tokenizers)) as client:
        yield client


def two_compactions(client: TestClient, wire: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A first summary, then an update of it with the rest of the session."""
    messages = load_json(CLAUDE_CODE / f"{SESSION}.{wire}.json")["messages"]

    def turn_boundary(start: int) -> int:  # where the model speaks next
        while messages[start]["role"] != "assistant":
            start += 1
        return start

    half, end = turn_boundary(100), turn_boundary(200)
    settings = {"force": True, "keep_recent_tokens": 2_000}
    first = client.post("/compact", json={"messages": messages[:half], **settings})
    assert first.status_code == 200, first.text
    later = [*first.json()["messages"], *messages[half:end]]
    second = client.post("/compact", json={"messages": later, **settings})
    assert second.status_code == 200, second.text
    assert second.json()["updated_previous_summary"] is True
    return first.json(), second.json()


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_the_second_summary_call_reads_the_fixed_instructions_from_the_cache(
    fake: BillingUpstream, wire: str, tmp_path: Path, tokenizers: TokenizerRegistry
) -> None:
    with summarizing_with(fake, wire, tmp_path, tokenizers) as client:
        first, second = two_compactions(client, wire)
    calls = fake.bills
    assert [b.status for b in calls] == [200, 200]
    assert calls[0].read == 0
    # At least the fixed instructions (over a thousand tokens) were read, not sent again.
    assert calls[1].read >= 1024
    assert second["summarizer"]["cache_read_tokens"] == calls[1].read
    assert first["summarizer"]["cache_read_tokens"] == 0
    # The reported input is the whole prompt, cached or not.
    assert second["summarizer"]["input_tokens"] == calls[1].prompt_tokens
    if wire == "anthropic":
        # Written for an hour: one session's summaries come minutes apart.
        assert first["summarizer"]["cache_write_tokens"] == calls[0].write_1h > 1024
    # The second call cost less than its prompt at the full price.
    assert calls[1].uncached < calls[1].prompt_tokens


def test_the_instructions_are_byte_identical_and_come_first(
    fake: BillingUpstream, tmp_path: Path, tokenizers: TokenizerRegistry
) -> None:
    with summarizing_with(fake, "anthropic", tmp_path, tokenizers) as client:
        two_compactions(client, "anthropic")
    first, second = fake.bodies("messages")
    marked = {
        "type": "text",
        "text": SUMMARIZER_SYSTEM_PROMPT,
        "cache_control": {"type": "ephemeral", "ttl": "1h"},
    }
    assert first["system"] == second["system"] == [marked]
    # First summary: the conversation only. Update: the previous summary, marked, first.
    (conversation,) = first["messages"][0]["content"]
    assert conversation["text"].startswith("<conversation>")
    assert "cache_control" not in conversation
    previous, new = second["messages"][0]["content"]
    assert previous["text"].startswith("<previous-summary>")
    assert previous["cache_control"] == {"type": "ephemeral"}
    assert new["text"].startswith("<conversation>") and "cache_control" not in new
    assert all(b.breakpoints <= MAX_BREAKPOINTS for b in fake.bills)


def test_the_instructions_stay_cached_between_summaries_minutes_apart(
    tmp_path: Path, tokenizers: TokenizerRegistry
) -> None:
    clock = SimulatedClock()
    with (
        BillingUpstream(clock, summarizing) as fake,
        summarizing_with(fake, "anthropic", tmp_path, tokenizers) as client,
    ):
        messages = load_json(CLAUDE_CODE / f"{SESSION}.anthropic.json")["messages"]
        settings = {"force": True, "keep_recent_tokens": 2_000}
        for end in (60, 120, 180):
            history = messages[:end]
            while history[-1]["role"] == "assistant":
                history = history[:-1]
            assert (
                client.post("/compact", json={"messages": history, **settings}).status_code == 200
            )
            clock.advance(10 * 60)  # an agent's compactions are many minutes apart
    first, *later = fake.bills
    assert first.write_1h > 1024
    assert all(bill.read >= 1024 for bill in later)


def test_openai_summary_calls_share_one_prompt_cache_key(
    fake: BillingUpstream, tmp_path: Path, tokenizers: TokenizerRegistry
) -> None:
    with summarizing_with(fake, "openai", tmp_path, tokenizers) as client:
        two_compactions(client, "openai")
    first, second = fake.bodies("chat")
    assert first["prompt_cache_key"] == second["prompt_cache_key"] == SUMMARY_CACHE_KEY
    assert first["messages"][0] == second["messages"][0]
    assert first["messages"][0] == {"role": "system", "content": SUMMARIZER_SYSTEM_PROMPT}
    assert second["messages"][1]["content"].startswith("<previous-summary>")
