"""`X-Compactor-Dry-Run: 1` on proxied requests (SPEC §17): the request goes to the
upstream exactly as it would have without compaction, the answer's X-Compactor-Would-*
headers say what compaction would have done, and nothing is written — no compaction
record, summary-cache entry, resend memo, background summary or lease, no turn, no reply
and no line in the cost ledger. Every table of the store is counted before and after."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.fake_upstreams import FakeUpstream, context_too_long_openai
from tests.integration.live_server import live_service
from tests.integration.proxy.conftest import proxy_settings

# Small windows (registry entries of the test): a few thousand words cross the threshold.
WINDOW = 8_192
MODELS = {
    "dry-gpt": {"provider": "openai", "context_window": WINDOW, "max_output_tokens": 1024},
    "dry-claude": {"provider": "anthropic", "context_window": WINDOW, "max_output_tokens": 1024},
    "dry-gemini": {"provider": "google", "context_window": WINDOW, "max_output_tokens": 1024},
}


@dataclass(frozen=True)
class Api:
    """One proxied API: its route, and a body of it carrying a history."""

    name: str
    model: str

    def path(self, streamed: bool) -> str:
        if self.name == "gemini":
            verb = "streamGenerateContent?alt=sse" if streamed else "generateContent"
            return f"/v1beta/models/{self.model}:{verb}"
        return {"chat": "/v1/chat/completions", "responses": "/v1/responses"}.get(
            self.name, "/v1/messages"
        )

    def message(self, role: str, text: str) -> dict[str, Any]:
        if self.name == "gemini":
            return {"role": "model" if role == "assistant" else role, "parts": [{"text": text}]}
        return {"role": role, "content": text}

    def body(self, history: list[dict[str, Any]], streamed: bool) -> dict[str, Any]:
        if self.name == "gemini":
            return {"contents": history}
        key = "input" if self.name == "responses" else "messages"
        body: dict[str, Any] = {"model": self.model, key: history}
        if self.name == "messages":
            body["max_tokens"] = 512
        if streamed:
            body["stream"] = True
        return body

    def history_of(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return list(body.get("contents") or body.get("input") or body.get("messages") or [])


APIS = [
    Api("chat", "dry-gpt"),
    Api("responses", "dry-gpt"),
    Api("messages", "dry-claude"),
    Api("gemini", "dry-gemini"),
]


def conversation(api: Api, turns: int, words: int = 120) -> list[dict[str, Any]]:
    """User and assistant turns, a user message last; each message a distinct text."""
    history = []
    for i in range(turns):
        history.append(
            api.message("user", f"Turn {i}: " + " ".join(f"w{i}x{j}" for j in range(words)))
        )
        history.append(api.message("assistant", f"Noted turn {i}."))
    history.append(api.message("user", "What did turn 0 say?"))
    return history


def table_counts(database: Path) -> dict[str, int]:
    """The row count of every table of the SQLite store (the FTS5 index's own too)."""
    with sqlite3.connect(database) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {name: db.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in names}


def send(
    url: str, api: Api, body: dict[str, Any], streamed: bool, **headers: str
) -> tuple[httpx.Response, bytes]:
    """The answer's status and headers, and its body read to the end."""
    raw = json.dumps(body).encode()
    with (
        httpx.Client(base_url=url, timeout=30) as client,
        client.stream(
            "POST",
            api.path(streamed),
            content=raw,
            headers={"content-type": "application/json", **headers},
        ) as answer,
    ):
        return answer, answer.read()


def models_file(tmp_path: Path) -> Path:
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"models": MODELS}))
    return path


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "compactor.db"


@pytest.fixture
def proxy(tmp_path: Path, upstream: FakeUpstream) -> Iterator[str]:
    """The proxy as deployed by default (prepare-ahead on, the extractive summarizer)."""
    with live_service(proxy_settings(tmp_path, upstream, models_file=models_file(tmp_path))) as url:
        yield url


@pytest.fixture
def inline_proxy(tmp_path: Path, upstream: FakeUpstream) -> Iterator[str]:
    """Compaction on the crossing turn itself: what a dry run predicts happens at once."""
    settings = proxy_settings(
        tmp_path, upstream, models_file=models_file(tmp_path), prepare_ahead_ratio="off"
    )
    with live_service(settings) as url:
        yield url


def would(answer: httpx.Response, name: str) -> str:
    return answer.headers[f"x-compactor-would-{name}"]


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", APIS, ids=[a.name for a in APIS])
def test_a_dry_run_forwards_uncompacted_reports_the_compaction_and_writes_nothing(
    inline_proxy: str, upstream: FakeUpstream, database: Path, api: Api, streamed: bool
) -> None:
    body = api.body(conversation(api, 40), streamed)
    before = table_counts(database)
    answer, content = send(inline_proxy, api, body, streamed, **{"X-Compactor-Dry-Run": "1"})
    assert answer.status_code == 200, content
    assert content  # the upstream's answer, relayed
    # The upstream got the request as sent, history and all.
    assert upstream.received[-1].body == body
    assert answer.headers["x-compactor-compacted"] == "false"
    assert answer.headers["x-compactor-dry-run"] == "true"
    assert would(answer, "compact") == "true"
    tokens_before, tokens_after = (
        int(would(answer, "tokens-before")),
        int(would(answer, "tokens-after")),
    )
    assert tokens_after < tokens_before
    assert answer.headers["x-compactor-tokens-before"] == str(tokens_before)
    folded, cut = int(would(answer, "fold")), int(would(answer, "cut"))
    assert folded > 0 and cut == folded  # no inline system message: the cut is the count
    assert would(answer, "use-cache") == "false"
    assert table_counts(database) == before

    # Sent for real, the request is compacted as previewed.
    real, _ = send(inline_proxy, api, body, streamed)
    assert real.headers["x-compactor-compacted"] == "true"
    assert real.headers["x-compactor-tokens-after"] == str(tokens_after)
    sent = api.history_of(upstream.received[-1].body)
    history = api.history_of(body)
    assert len(sent) == 1 + len(history) - cut  # the summary, then the kept tail
    assert sent[-1] == history[-1]


@pytest.mark.parametrize("api", APIS, ids=[a.name for a in APIS])
def test_a_dry_run_says_when_the_cached_summary_would_be_used(
    inline_proxy: str, upstream: FakeUpstream, database: Path, api: Api
) -> None:
    history = conversation(api, 40)
    send(inline_proxy, api, api.body(history, False), False)  # compacts, caches the summary
    history += [api.message("assistant", "Turn 0 said w0x0."), api.message("user", "And turn 1?")]
    before = table_counts(database)
    answer, _ = send(
        inline_proxy, api, api.body(history, False), False, **{"X-Compactor-Dry-Run": "true"}
    )
    assert would(answer, "compact") == "true"
    assert would(answer, "use-cache") == "true"
    assert api.history_of(upstream.received[-1].body) == history
    assert table_counts(database) == before


def test_under_the_threshold_a_dry_run_says_why_nothing_would_happen(
    proxy: str, upstream: FakeUpstream, database: Path
) -> None:
    api = APIS[0]
    body = api.body(conversation(api, 2), False)
    before = table_counts(database)
    answer, _ = send(proxy, api, body, False, **{"X-Compactor-Dry-Run": "1"})
    assert would(answer, "compact") == "false"
    assert would(answer, "reason") == "under threshold"
    assert would(answer, "tokens-before") == would(answer, "tokens-after")
    assert would(answer, "fold") == "0" and would(answer, "cut") == ""
    assert upstream.received[-1].body == body
    assert table_counts(database) == before


@pytest.mark.parametrize("api", APIS[:2], ids=[a.name for a in APIS[:2]])
def test_past_the_soft_threshold_a_dry_run_prepares_nothing_ahead(
    proxy: str, upstream: FakeUpstream, database: Path, api: Api
) -> None:
    # Under the threshold (6,963 here) but past 80% of it: a real request would start the
    # summary in the background (a lease, then a summary-cache entry).
    body = api.body(conversation(api, 12), False)
    before = table_counts(database)
    answer, _ = send(proxy, api, body, False, **{"X-Compactor-Dry-Run": "1"})
    assert would(answer, "compact") == "false"
    assert int(would(answer, "tokens-before")) > 0.8 * 6_963
    assert table_counts(database) == before


def test_an_overflow_answer_is_not_retried_in_a_dry_run(
    inline_proxy: str, upstream: FakeUpstream, database: Path
) -> None:
    api = APIS[0]
    upstream.script(context_too_long_openai())
    before = table_counts(database)
    answer, content = send(
        inline_proxy,
        api,
        api.body(conversation(api, 4), False),
        False,
        **{"X-Compactor-Dry-Run": "1"},
    )
    assert answer.status_code == 400
    assert json.loads(content)["error"]["code"] == "context_length_exceeded"
    assert len(upstream.received) == 1
    assert table_counts(database) == before


def test_native_context_management_cannot_be_previewed(
    proxy: str, upstream: FakeUpstream, database: Path
) -> None:
    api = APIS[2]
    body = api.body(conversation(api, 2), False)
    body["context_management"] = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    answer, content = send(proxy, api, body, False, **{"X-Compactor-Dry-Run": "1"})
    assert answer.status_code == 400
    assert "cannot be previewed" in content.decode()
    assert upstream.received == []


def test_an_unreadable_dry_run_header_is_refused(proxy: str, upstream: FakeUpstream) -> None:
    api = APIS[0]
    answer, content = send(
        proxy, api, api.body(conversation(api, 1), False), False, **{"X-Compactor-Dry-Run": "maybe"}
    )
    assert answer.status_code == 400
    assert "X-Compactor-Dry-Run" in content.decode()
    assert upstream.received == []
    # 0 is a request sent for real, with no preview headers.
    answer, _ = send(
        proxy, api, api.body(conversation(api, 1), False), False, **{"X-Compactor-Dry-Run": "0"}
    )
    assert answer.status_code == 200
    assert "x-compactor-would-compact" not in answer.headers


# --- Bound to a session -------------------------------------------------------------


def bound_session(url: str, api: Api, history: list[dict[str, Any]]) -> str:
    """A session of `api`'s format holding `history` (its last message a user's)."""
    fmt = {"chat": "openai", "messages": "anthropic"}.get(api.name, api.name)
    created = httpx.post(f"{url}/sessions", json={"model": api.model, "format": fmt})
    assert created.status_code == 201, created.text
    sid = str(created.json()["id"])
    appended = httpx.post(f"{url}/sessions/{sid}/messages", json={"messages": history})
    assert appended.status_code == 200, appended.text
    return sid


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", APIS, ids=[a.name for a in APIS])
def test_a_bound_dry_run_forwards_the_context_uncompacted_and_records_no_turn(
    proxy: str, upstream: FakeUpstream, database: Path, api: Api, streamed: bool
) -> None:
    history = conversation(api, 40)
    sid = bound_session(proxy, api, history[:-1])
    transcript = httpx.get(f"{proxy}/sessions/{sid}/transcript").json()["total"]
    before = table_counts(database)
    answer, content = send(
        proxy,
        api,
        api.body(history, streamed),
        streamed,
        **{"X-Compactor-Dry-Run": "1", "X-Compactor-Session": sid},
    )
    assert answer.status_code == 200, content
    assert answer.headers["x-compactor-session"] == sid
    assert answer.headers["x-compactor-compacted"] == "false"
    # The session's context with the request's new message, nothing folded.
    assert api.history_of(upstream.received[-1].body) == history
    assert would(answer, "compact") == "true"
    first, last = (int(s) for s in would(answer, "fold-seqs").split("-"))
    assert first == 0 and int(would(answer, "cut")) == last + 1
    assert int(would(answer, "fold")) == last + 1
    assert int(would(answer, "tokens-after")) < int(would(answer, "tokens-before"))
    # No turn, no reply, no record, no lease, no bill.
    assert table_counts(database) == before
    assert httpx.get(f"{proxy}/sessions/{sid}/transcript").json()["total"] == transcript
    assert httpx.get(f"{proxy}/sessions/{sid}/compactions").json()["compactions"] == []


@pytest.mark.parametrize("api", APIS, ids=[a.name for a in APIS])
def test_a_bound_dry_run_agrees_with_prepare_dry_run_and_with_the_real_turn(
    proxy: str, upstream: FakeUpstream, database: Path, api: Api
) -> None:
    # The transcript already ends with the request's user message (a retry after a failed
    # upstream records it once): the proxy's turn and `prepare` see the same context.
    history = conversation(api, 40)
    sid = bound_session(proxy, api, history)
    previewed = httpx.post(f"{proxy}/sessions/{sid}/prepare", json={"dry_run": True}).json()
    assert previewed["dry_run"] and previewed["compacted"]
    before = table_counts(database)
    headers = {"X-Compactor-Session": sid}
    answer, _ = send(
        proxy, api, api.body(history, False), False, **headers, **{"X-Compactor-Dry-Run": "1"}
    )
    record, folded = previewed["compaction"], previewed["folded"]
    assert int(would(answer, "tokens-before")) == record["tokens_before"]
    assert int(would(answer, "tokens-after")) == record["tokens_after"]
    assert int(would(answer, "cut")) == record["first_kept_seq"]
    assert would(answer, "fold-seqs") == f"{folded['from_seq']}-{folded['to_seq']}"
    assert int(would(answer, "fold")) == folded["count"]
    assert table_counts(database) == before

    real, _ = send(proxy, api, api.body(history, False), False, **headers)
    assert real.headers["x-compactor-compacted"] == "true"
    [made] = httpx.get(f"{proxy}/sessions/{sid}/compactions").json()["compactions"]
    assert made["first_kept_seq"] == record["first_kept_seq"]
    assert made["tokens_after"] == record["tokens_after"]
