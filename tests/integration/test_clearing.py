"""Tool-result clearing and the `auto` strategy on the real transcripts, through /compact."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine.clearing import CLEARED_RESULT_PREFIX, is_cleared_input
from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from tests.conftest import (
    AUTOCOMPACTED_ANTHROPIC,
    BIG_ANTHROPIC,
    BIG_OPENAI,
    CLAUDE_CODE,
    load_json,
)

TRANSCRIPTS = [
    BIG_OPENAI,
    BIG_ANTHROPIC,
    AUTOCOMPACTED_ANTHROPIC,
    CLAUDE_CODE / "4d5611e5-241a-462a-8d15-5122611a9569.openai.json",
]
EXCLUDED = ["Edit", "TodoWrite"]
KEEP = 5


def tool_uses(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(call id, tool name) of every tool call, in order, in either format."""
    found: list[tuple[str, str]] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            found.append((call["id"], call["function"]["name"]))
        if isinstance(message.get("content"), list):
            found += [(b["id"], b["name"]) for b in message["content"] if b["type"] == "tool_use"]
    return found


def results(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The result content of every answered call, by call id, in either format."""
    found: dict[str, Any] = {}
    for message in messages:
        if message.get("role") == "tool":
            found[message["tool_call_id"]] = message["content"]
        elif isinstance(message.get("content"), list):
            for block in message["content"]:
                if block["type"] == "tool_result":
                    found[block["tool_use_id"]] = block.get("content")
    return found


def text_of(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content)
    return str(content or "")


def without_results(message: dict[str, Any], cleared: set[str]) -> dict[str, Any]:
    """The message with the content of its cleared results taken out (for comparison)."""
    if message.get("role") == "tool" and message["tool_call_id"] in cleared:
        return {k: v for k, v in message.items() if k != "content"}
    if isinstance(message.get("content"), list):
        blocks = [
            {k: v for k, v in b.items() if k != "content"}
            if b["type"] == "tool_result" and b["tool_use_id"] in cleared
            else b
            for b in message["content"]
        ]
        return {**message, "content": blocks}
    return message


def compact(client: TestClient, body: dict[str, Any], **fields: Any) -> dict[str, Any]:
    response = client.post("/compact", json={**body, **fields})
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: Path(p).name)
def test_clearing_a_real_transcript_saves_tokens_and_keeps_everything_else(
    client: TestClient, path: Path
) -> None:
    body = load_json(path)
    original = copy.deepcopy(body["messages"])
    clear = {"keep": KEEP, "exclude_tools": EXCLUDED}
    out = compact(client, body, force=True, strategy="clear_tool_results", clear=clear)
    assert body["messages"] == original

    assert out["compacted"] and out["applied"] == ["clear_tool_results"]
    assert out["strategy"] == "clear_tool_results"
    assert out["summary"] is None and out["summarizer"] is None and out["cut_index"] is None
    # Tokens saved: most of a coding session is tool output.
    assert out["tokens_after"] < out["tokens_before"] // 2
    assert out["tokens_cleared"] == sum(c["tokens_saved"] for c in out["cleared_tool_uses"])
    recount = client.post("/estimate", json={**body, "messages": out["messages"]}).json()
    assert recount["tokens"] == out["tokens_after"]

    new = out["messages"]
    assert len(new) == len(original)
    assert tool_uses(new) == tool_uses(original)  # every pair intact, in place
    before, after = results(original), results(new)
    assert after.keys() == before.keys()
    cleared = {c["tool_call_id"]: c for c in out["cleared_tool_uses"]}
    assert cleared
    names = dict(tool_uses(original))
    for call_id, content in after.items():
        if call_id in cleared:
            placeholder = cleared[call_id]["placeholder"]
            assert text_of(content) == placeholder
            assert placeholder.startswith(f"{CLEARED_RESULT_PREFIX}: {names[call_id]}")
            assert isinstance(content, list) == isinstance(before[call_id], list)
        else:
            assert content == before[call_id]
    # Excluded tools and the newest tool uses are untouched.
    assert not any(names[call_id] in EXCLUDED for call_id in cleared)
    answered = [call_id for call_id, _ in tool_uses(original) if call_id in before]
    assert not set(answered[-KEEP:]) & cleared.keys()
    # Nothing else changed: messages without a cleared result are equal, the rest equal
    # once the cleared contents are taken out.
    for old, now in zip(original, new, strict=True):
        assert without_results(now, set(cleared)) == without_results(old, set(cleared))


@pytest.mark.parametrize("path", [BIG_OPENAI, BIG_ANTHROPIC], ids=["openai", "anthropic"])
def test_clearing_inputs_replaces_the_arguments_of_the_cleared_calls(
    client: TestClient, path: Path
) -> None:
    body = load_json(path)
    clear = {"keep": KEEP, "clear_tool_inputs": True}
    out = compact(client, body, force=True, strategy="clear_tool_results", clear=clear)
    with_inputs = {c["tool_call_id"] for c in out["cleared_tool_uses"] if c["input_cleared"]}
    assert with_inputs
    for message in out["messages"]:
        for call in message.get("tool_calls") or []:
            if call["id"] in with_inputs:
                assert is_cleared_input(call["function"]["arguments"])
        if isinstance(message.get("content"), list):
            for block in message["content"]:
                if block["type"] == "tool_use" and block["id"] in with_inputs:
                    assert set(block["input"]) == {"_cleared"}


@pytest.mark.parametrize("path", [BIG_OPENAI, BIG_ANTHROPIC], ids=["openai", "anthropic"])
def test_auto_clears_first_and_summarizes_only_when_still_over(
    client: TestClient, path: Path
) -> None:
    body = load_json(path)
    # Clearing alone gets under a threshold of 100k tokens: no summary, no model call.
    light = compact(client, body, strategy="auto", trigger_tokens=100_000)
    assert light["compacted"] and light["applied"] == ["clear_tool_results"]
    assert light["tokens_after"] <= 100_000 < light["tokens_before"]
    assert light["summary"] is None
    # Still over 20k tokens after clearing: the cleared history is summarized too.
    heavy = compact(client, body, strategy="auto", trigger_tokens=20_000, keep_recent_tokens=6_000)
    assert heavy["applied"] == ["clear_tool_results", "summarize"]
    assert heavy["tokens_after"] < light["tokens_after"]
    assert heavy["messages"][0]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert heavy["summarizer"]["provider"] == "extractive"
    cut = heavy["cut_index"]
    assert tool_uses(heavy["messages"][1:]) == tool_uses(body["messages"][cut:])
    kept_results = results(heavy["messages"])
    for use in heavy["cleared_tool_uses"]:
        if use["tool_call_id"] in kept_results:
            assert text_of(kept_results[use["tool_call_id"]]) == use["placeholder"]


def test_clearing_says_why_when_it_does_nothing(client: TestClient) -> None:
    body = load_json(CLAUDE_CODE / "tool_heavy.openai.json")
    under = compact(client, body, strategy="clear_tool_results")
    assert not under["compacted"] and "under the clearing trigger" in under["reason"]
    assert under["messages"] == body["messages"] and under["applied"] == []
    small = compact(
        client, body, force=True, strategy="clear_tool_results", clear={"clear_at_least": 50_000}
    )
    assert not small["compacted"] and "clear_at_least=50000" in small["reason"]
    everything_kept = compact(
        client, body, force=True, strategy="clear_tool_results", clear={"keep": 1000}
    )
    assert not everything_kept["compacted"] and "nothing to clear" in everything_kept["reason"]
    # Over a low clearing trigger, clearing still waits for a whole cache-aware step (a
    # quarter of the threshold at most), and says so.
    early = compact(client, body, strategy="clear_tool_results", clear={"trigger": 1_000})
    assert not early["compacted"] and "steps of" in early["reason"]
    small_threshold = {"trigger_tokens": 2_000}  # the history is 2,396 tokens
    over = compact(
        client, body, strategy="clear_tool_results", clear={"trigger": 1_000}, **small_threshold
    )
    assert over["compacted"] and over["applied"] == ["clear_tool_results"]


def test_clear_settings_are_validated(client: TestClient) -> None:
    response = client.post(
        "/compact",
        json={"messages": [], "strategy": "clear_tool_results", "clear": {"keep": -1, "x": 1}},
    )
    assert response.status_code == 422
    fields = {e["field"] for e in response.json()["errors"]}
    assert fields == {"clear.keep", "clear.x"}
    bad = client.post("/compact", json={"messages": [], "strategy": "shrink"})
    assert bad.status_code == 422
