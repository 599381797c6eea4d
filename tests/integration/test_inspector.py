"""The inspector over plain HTTP: the text a reader gets with scripts off, the curve the
service computes, escaping, pagination, login cookie and tenant scoping."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.services.inspector.reading import InspectorService
from app.settings import Settings
from tests.conftest import BIG_ANTHROPIC, CLAUDE_CODE, load_json
from tests.fidelity_scenario import ForgetfulSummarizer
from tests.inspector_session import (
    HOSTILE_TEXT,
    BuiltSession,
    build_compacted_session,
    build_hostile_session,
)

ALPHA_KEY = "key-alpha-0123456789"
BETA_KEY = "key-beta-0123456789"
KEYS = f"alpha:{ALPHA_KEY},beta:{BETA_KEY}"
ALPHA = {"Authorization": f"Bearer {ALPHA_KEY}"}
PIN = "The staging database listens on port 5433."


class VisibleText(HTMLParser):
    """The text a browser with scripts off shows: everything outside script and style."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._hidden += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._hidden -= tag in ("script", "style")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def visible_text(html: str) -> str:
    parser = VisibleText()
    parser.feed(html)
    return re.sub(r"\s+", " ", "".join(parser.parts))


@pytest.fixture(scope="module")
def open_site(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TestClient, BuiltSession]]:
    """A server without API keys holding one compacted session."""
    db = tmp_path_factory.mktemp("inspector-open") / "compactor.db"
    with TestClient(create_app(Settings(database_url=f"sqlite:///{db}"))) as client:
        yield client, build_compacted_session(client)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, str]]:
    """A server with two tenants' keys; alpha owns one session with markup in it."""
    db = tmp_path_factory.mktemp("inspector-keys") / "compactor.db"
    app = create_app(Settings(database_url=f"sqlite:///{db}", api_keys=KEYS))
    with TestClient(app) as client:
        client.headers.update(ALPHA)
        sid = build_hostile_session(client)
        client.headers.pop("Authorization")
        yield client, sid


def test_the_session_page_reads_without_scripts(
    open_site: tuple[TestClient, BuiltSession],
) -> None:
    client, session = open_site
    answer = client.get(f"/ui/sessions/{session.id}")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    text = visible_text(answer.text)
    records = session.compactions
    assert f"Compactions ({len(records)})" in text
    for record in records:
        assert f"{record['tokens_before']:,} → {record['tokens_after']:,} tokens" in text
    assert "Folded entries 0–" in text
    assert re.search(r"Threshold\s*30,000 tokens", text)
    assert "Transcript (298 entries)" in text
    assert "page 1 of 6 · entries 0–49" in text
    # The chart is markup too: one circle per turn, one marker per compaction.
    assert answer.text.count('<circle class="turn"') == len(session.messages)
    assert answer.text.count('<g class="compaction-marker"') == len(records)
    assert f'data-vertices="{len(session.messages) + len(records)}"' in answer.text
    assert "<ins>" in answer.text and "<del>" in answer.text
    csp = answer.headers["content-security-policy"]
    assert "script-src 'nonce-" in csp and "default-src 'none'" in csp


def test_the_curve_meets_every_recorded_compaction_and_ends_at_the_context(
    open_site: tuple[TestClient, BuiltSession],
) -> None:
    """Counted from the transcript alone, the curve goes through each record's tokens
    before and after, and its last point is the context the API reports now."""
    client, session = open_site
    sessions = client.app_state["compactor"].sessions
    inspection = InspectorService(sessions).inspect("default", session.id, 1, 50)
    curve = inspection.curve
    assert len(curve.points) == len(session.messages)
    assert [(d.before, d.after) for d in curve.drops] == [
        (r["tokens_before"], r["tokens_after"]) for r in session.compactions
    ]
    assert [d.seq for d in curve.drops] == [
        r_seq - 1 for r_seq in (c.covered_seq for c in inspection.compactions)
    ]
    context = client.get(f"/sessions/{session.id}/context").json()
    assert curve.points[-1].tokens == context["estimate"]["tokens"]
    assert curve.threshold == 30_000


def test_the_transcript_is_paginated(open_site: tuple[TestClient, BuiltSession]) -> None:
    client, session = open_site
    second = client.get(f"/ui/sessions/{session.id}", params={"page": 2}).text
    seqs = [int(s) for s in re.findall(r'<li class="entry[^"]*" id="entry-(\d+)"', second)]
    assert seqs == list(range(50, 100))
    beyond = client.get(f"/ui/sessions/{session.id}", params={"page": 99}).text
    seqs = [int(s) for s in re.findall(r'id="entry-(\d+)"', beyond)]
    assert seqs == list(range(250, 298))
    assert 'class="next"' not in beyond


def test_huge_inspector_pages_are_refused(client: TestClient) -> None:
    response = client.get("/ui", params={"page": 10**30})
    assert response.status_code == 422, response.text


def test_the_sessions_list_links_each_session(
    open_site: tuple[TestClient, BuiltSession],
) -> None:
    client, session = open_site
    text = client.get("/ui").text
    assert f'href="/ui/sessions/{session.id}"' in text
    assert "page 1 of 1 · 1 sessions" in visible_text(text)
    missing = client.get("/ui/sessions/no-such-session")
    assert missing.status_code == 404
    assert "Session not found" in missing.text


def test_markup_in_the_transcript_and_summary_is_escaped(keyed: tuple[TestClient, str]) -> None:
    client, sid = keyed
    html = client.get(f"/ui/sessions/{sid}", headers=ALPHA).text
    assert "<script>window.__pwned" not in html
    assert "<img src=x" not in html
    escaped = "&lt;script&gt;window.__pwned = 1&lt;/script&gt;"
    # In user text, in a tool result, and in the summary that folded them.
    assert html.count(escaped) >= 3
    assert HOSTILE_TEXT in visible_text(html)


def test_without_a_key_the_inspector_sends_a_browser_to_the_login_form(
    keyed: tuple[TestClient, str],
) -> None:
    client, sid = keyed
    answer = client.get(f"/ui/sessions/{sid}?page=1", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/ui/login?next=%2Fui%2Fsessions%2F{sid}%3Fpage%3D1"
    assert (
        client.get(
            "/ui", headers={"Authorization": "Bearer nope-nope-nope"}, follow_redirects=False
        ).status_code
        == 303
    )
    assert client.get("/ui", headers=ALPHA).status_code == 200
    form = client.get("/ui/login").text
    assert 'name="key"' in form and 'type="password"' in form


def test_login_sets_a_cookie_that_opens_only_the_inspector(keyed: tuple[TestClient, str]) -> None:
    client, sid = keyed
    wrong = client.post("/ui/login", data={"key": "key-wrong-0123456789", "next": "/ui"})
    assert wrong.status_code == 401
    assert "That API key is not valid." in wrong.text
    assert "set-cookie" not in wrong.headers
    answer = client.post(
        "/ui/login",
        data={"key": ALPHA_KEY, "next": f"/ui/sessions/{sid}"},
        follow_redirects=False,
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/ui/sessions/{sid}"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    assert "Secure" not in cookie
    value = cookie.split(";", 1)[0].split("=", 1)[1]
    assert ALPHA_KEY not in cookie
    client.cookies.clear()
    client.cookies.set("compactor_ui", value, path="/ui")
    page = client.get(f"/ui/sessions/{sid}")
    assert page.status_code == 200 and "signed in as" in page.text
    # The cookie is no API credential, even when sent to the API.
    client.cookies.set("compactor_ui", value)
    assert client.get(f"/sessions/{sid}").status_code == 401
    client.cookies.clear()


def test_the_cookie_is_secure_over_https(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}", api_keys=KEYS)
    with TestClient(create_app(settings), base_url="https://testserver") as client:
        answer = client.post("/ui/login", data={"key": BETA_KEY}, follow_redirects=False)
        assert answer.status_code == 303
        assert "Secure" in answer.headers["set-cookie"]


def test_login_never_redirects_off_the_inspector(keyed: tuple[TestClient, str]) -> None:
    client, _ = keyed
    for target in ("https://evil.example/ui", "//evil.example/ui", "/sessions", "/\\evil.example"):
        answer = client.post(
            "/ui/login", data={"key": ALPHA_KEY, "next": target}, follow_redirects=False
        )
        assert answer.headers["location"] == "/ui", target
    client.cookies.clear()


def test_a_tenant_sees_only_its_own_sessions(keyed: tuple[TestClient, str]) -> None:
    client, sid = keyed
    beta = {"Authorization": f"Bearer {BETA_KEY}"}
    assert sid not in client.get("/ui", headers=beta).text
    assert client.get(f"/ui/sessions/{sid}", headers=beta).status_code == 404
    assert sid in client.get("/ui", headers=ALPHA).text


def test_logout_clears_the_cookie(keyed: tuple[TestClient, str]) -> None:
    client, _ = keyed
    answer = client.post("/ui/logout", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/login"
    assert 'compactor_ui=""' in answer.headers["set-cookie"]
    assert "Max-Age=0" in answer.headers["set-cookie"]


def test_an_empty_session_has_a_page_too(open_site: tuple[TestClient, BuiltSession]) -> None:
    client, _ = open_site
    sid = client.post("/sessions", json={"model": "gpt-4o"}).json()["id"]
    answer = client.get(f"/ui/sessions/{sid}")
    assert answer.status_code == 200
    text = visible_text(answer.text)
    assert "This session was never compacted." in text
    assert "Transcript (0 entries)" in text
    assert 'data-turns="0"' in answer.text
    client.delete(f"/sessions/{sid}")


def test_cleared_tool_uses_are_listed_and_the_curve_still_meets_every_record(
    tmp_path: Path,
) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}")
    with TestClient(create_app(settings)) as client:
        session = build_compacted_session(client, BIG_ANTHROPIC, strategy="auto")
        records = session.compactions
        assert any(r["cleared_tool_uses"] for r in records)
        sessions = client.app_state["compactor"].sessions
        inspection = InspectorService(sessions).inspect("default", session.id, 1, 50)
        assert [(d.before, d.after) for d in inspection.curve.drops] == [
            (r["tokens_before"], r["tokens_after"]) for r in records
        ]
        html = client.get(f"/ui/sessions/{session.id}").text
    assert html.count('<table class="cleared-tool-uses">') == sum(
        1 for r in records if r["cleared_tool_uses"]
    )
    cleared = next(r for r in records if r["cleared_tool_uses"])["cleared_tool_uses"][0]
    assert f"<code>{cleared['tool_call_id']}</code>" in html
    assert "clear_tool_results" in visible_text(html)


def test_restored_facts_and_the_request_in_progress_are_shown(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}")
    with TestClient(create_app(settings, summarizer=ForgetfulSummarizer())) as client:
        sid = client.post("/sessions", json={"keep_recent_tokens": 200, "pinned": [PIN]}).json()[
            "id"
        ]
        filler = "The parser reads tokens one by one and builds the tree. " * 30
        messages = [
            {"role": "user", "content": f"Fix the parser. Never touch `gen/`. {filler}"},
            {"role": "assistant", "content": "Now the edit. " + filler},
            {"role": "user", "content": "Then run the tests."},
            {"role": "assistant", "content": "Running them. " + filler},
        ]
        client.post(f"/sessions/{sid}/messages", json={"messages": messages})
        record = client.post(f"/sessions/{sid}/compact", json={}).json()["compaction"]
        assert record["restored_facts"]
        text = visible_text(client.get(f"/ui/sessions/{sid}").text)
    assert f"pinned {PIN}" in text
    assert "constraint Never touch `gen/`." in text
    assert "Request in progress at the cut: Then run the tests." in text


def test_the_curve_counts_with_the_session_model_and_keeps_the_system_prefix(
    tmp_path: Path,
) -> None:
    """An OpenAI session on a cl100k model whose transcript opens with system messages."""
    body = load_json(CLAUDE_CODE / "4d5611e5-241a-462a-8d15-5122611a9569.openai.json")
    prefix = [
        {"role": "system", "content": "You are a careful coding agent. " * 20},
        {"role": "developer", "content": "Answer briefly."},
    ]
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}")
    with TestClient(create_app(settings)) as client:
        sid = client.post(
            "/sessions",
            json={"model": "gpt-4-turbo", "trigger_tokens": 30_000, "keep_recent_tokens": 8_000},
        ).json()["id"]
        messages = prefix + body["messages"]
        for start in range(0, len(messages), 40):
            batch = messages[start : start + 40]
            client.post(f"/sessions/{sid}/messages", json={"messages": batch})
            client.post(f"/sessions/{sid}/prepare")
        records = client.get(f"/sessions/{sid}/compactions").json()["compactions"]
        assert len(records) >= 3
        sessions = client.app_state["compactor"].sessions
        inspection = InspectorService(sessions).inspect("default", sid, 1, 50)
        assert [(d.before, d.after) for d in inspection.curve.drops] == [
            (r["tokens_before"], r["tokens_after"]) for r in records
        ]
        context = client.get(f"/sessions/{sid}/context").json()
        assert inspection.curve.points[-1].tokens == context["estimate"]["tokens"]
        assert [e.state for e in inspection.entries[:3]] == ["prefix", "prefix", "folded"]
        assert inspection.compactions[0].folded_start == 2


def test_a_login_posted_from_another_site_is_refused(keyed: tuple[TestClient, str]) -> None:
    client, _ = keyed
    for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        answer = client.post(
            "/ui/login", data={"key": ALPHA_KEY}, headers=headers, follow_redirects=False
        )
        assert answer.status_code == 403, headers
        assert "set-cookie" not in answer.headers
    same = client.post(
        "/ui/login",
        data={"key": ALPHA_KEY},
        headers={"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"},
        follow_redirects=False,
    )
    assert same.status_code == 303
    client.cookies.clear()
