"""GET /sessions/{id}/search on SQLite FTS5 and PostgreSQL full-text search: folded entries
found, tool calls and results by name and content, tenant-scoped, bounded, 4xx (never a
500) for any query text."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from app.settings import Settings

KEYS = "alpha:alpha-key-123,beta:beta-key-456"
ALPHA = {"Authorization": "Bearer alpha-key-123"}
BETA = {"Authorization": "Bearer beta-key-456"}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, api_keys=KEYS)


def _session(client: TestClient, messages: list[dict[str, Any]], **body: Any) -> str:
    sid: str = client.post("/sessions", json=body, headers=ALPHA).json()["id"]
    answer = client.post(f"/sessions/{sid}/messages", json={"messages": messages}, headers=ALPHA)
    assert answer.status_code == 200, answer.text
    return sid


def _filler(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"routine step {i} of the work"}
        for i in range(n)
    ]


def _search(client: TestClient, sid: str, q: str, **params: Any) -> Any:
    answer = client.get(f"/sessions/{sid}/search", params={"q": q, **params}, headers=ALPHA)
    assert answer.status_code == 200, answer.text
    return answer.json()


TOOL_TURN = [
    {"role": "user", "content": "look up the staging config"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_config", "arguments": '{"path": "deploy/staging.toml"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "listen_port = 8443\nregion = eu-west"},
    {"role": "assistant", "content": "The staging service listens on 8443."},
]


def test_a_folded_entry_is_found_with_its_seq_snippet_and_folded_flag(client: TestClient) -> None:
    planted = {"role": "user", "content": "Remember: the vault passphrase hint is marmalade."}
    messages = [planted, *_filler(60)]
    sid = _session(client, messages, trigger_tokens=100_000, keep_recent_tokens=60)
    compacted = client.post(f"/sessions/{sid}/compact", json={}, headers=ALPHA).json()
    assert compacted["compacted"]
    found = _search(client, sid, "marmalade")
    assert found["match"] == "all"
    [hit] = found["hits"]
    assert hit["seq"] == 0 and hit["role"] == "user" and hit["rank"] == 1
    assert hit["folded"] is True
    assert "**marmalade**" in hit["snippet"]
    # Stemmed: another form of a word finds it.
    assert _search(client, sid, "passphrases")["hits"][0]["seq"] == 0
    # A kept entry says so; folded_only leaves it out.
    last = _search(client, sid, '"routine step 59"')["hits"]
    assert [h["seq"] for h in last] == [60] and last[0]["folded"] is False
    assert _search(client, sid, '"routine step 59"', folded_only=True)["hits"] == []
    assert [h["seq"] for h in _search(client, sid, "marmalade", folded_only=True)["hits"]] == [0]


def test_tool_calls_and_results_are_found_by_tool_name_and_content(client: TestClient) -> None:
    sid = _session(client, TOOL_TURN[:2])
    # The result comes in a later append: it is still found by its tool's name.
    client.post(f"/sessions/{sid}/messages", json={"messages": TOOL_TURN[2:]}, headers=ALPHA)
    by_name = {h["seq"] for h in _search(client, sid, "read_config")["hits"]}
    assert by_name == {1, 2}
    assert [h["seq"] for h in _search(client, sid, "staging.toml")["hits"]] == [1]
    assert {h["seq"] for h in _search(client, sid, "8443")["hits"]} == {2, 3}
    assert [h["seq"] for h in _search(client, sid, "read_config eu-west")["hits"]] == [2]


def test_query_syntax_phrase_prefix_exclusion_or_and_loosening(client: TestClient) -> None:
    messages = [
        {"role": "user", "content": "the blue whale migrates south"},
        {"role": "assistant", "content": "a whale of a time up north"},
        {"role": "user", "content": "blue skies and migrating birds"},
    ]
    sid = _session(client, messages)
    seqs = lambda q: sorted(h["seq"] for h in _search(client, sid, q)["hits"])  # noqa: E731
    assert seqs('"blue whale"') == [0]
    assert seqs("whale -blue") == [1]
    assert seqs("migr*") == [0, 2]
    assert seqs("north OR south") == [0, 1]
    # No entry holds every word: any of them is enough, and the answer says so.
    loose = _search(client, sid, "whale birds")
    assert loose["match"] == "any" and sorted(h["seq"] for h in loose["hits"]) == [0, 1, 2]
    assert seqs("zebra") == []


@pytest.mark.parametrize(
    "q",
    ['"unclosed phrase', "OR", "whale OR", "-whale", "***", 'a "b" "', "x" * 501],
)
def test_bad_query_syntax_is_a_4xx_that_says_what_to_fix(client: TestClient, q: str) -> None:
    sid = _session(client, _filler(2))
    answer = client.get(f"/sessions/{sid}/search", params={"q": q}, headers=ALPHA)
    assert answer.status_code in (400, 422), answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["detail"]


def test_search_is_tenant_scoped_and_bounded(client: TestClient) -> None:
    sid = _session(client, [{"role": "user", "content": f"needle {i}"} for i in range(150)])
    other = client.get(f"/sessions/{sid}/search", params={"q": "needle"}, headers=BETA)
    assert other.status_code == 404
    assert len(_search(client, sid, "needle", limit=100)["hits"]) == 100
    over = client.get(
        f"/sessions/{sid}/search", params={"q": "needle", "limit": 101}, headers=ALPHA
    )
    assert over.status_code == 422
    # Beta's own session with the same words does not leak into alpha's results.
    beta_sid = client.post("/sessions", json={}, headers=BETA).json()["id"]
    client.post(
        f"/sessions/{beta_sid}/messages",
        json={"messages": [{"role": "user", "content": "needle secret"}]},
        headers=BETA,
    )
    assert _search(client, sid, "secret")["hits"] == []


@hsettings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    q=st.text(
        alphabet=st.sampled_from(list("ab \"*-():^.,'OR NOT AND NEAR{}[]+~\\é\t"))
        | st.characters(),
        min_size=1,
        max_size=40,
    )
)
def test_no_query_text_is_a_500(client: TestClient, q: str) -> None:
    sid = getattr(test_no_query_text_is_a_500, "sid", None)
    if sid is None or getattr(test_no_query_text_is_a_500, "client", None) is not client:
        sid = _session(client, [{"role": "user", "content": 'a b "quoted" NOT AND OR (x)'}])
        test_no_query_text_is_a_500.sid = sid  # type: ignore[attr-defined]
        test_no_query_text_is_a_500.client = client  # type: ignore[attr-defined]
    answer = client.get(f"/sessions/{sid}/search", params={"q": q}, headers=ALPHA)
    assert answer.status_code < 500, (q, answer.text)
