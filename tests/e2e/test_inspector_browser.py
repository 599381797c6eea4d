"""The inspector page in a real headless browser (Debian's chromium through Playwright).

A real uvicorn server on loopback holds a session built from a real transcript with
several compactions; the tests look at what a person sees: the curve, the compaction
markers and their numbers, a marked summary diff, the transcript pages, the login.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from app.settings import Settings
from tests.inspector_session import (
    HOSTILE_TEXT,
    BuiltSession,
    build_compacted_session,
    build_hostile_session,
)
from tests.live_server import live_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ALPHA_KEY = "key-alpha-0123456789"
BETA_KEY = "key-beta-0123456789"
KEYS = f"alpha:{ALPHA_KEY},beta:{BETA_KEY}"

if not CHROMIUM.exists():
    _message = (
        f"{CHROMIUM} not found (apt-get install -y chromium): the inspector BROWSER TESTS "
        "are SKIPPED on this machine"
    )
    if os.environ.get("CI"):
        raise RuntimeError(_message + " — CI must run them")
    pytest.skip(_message, allow_module_level=True)

from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright  # noqa: E402


@dataclass(frozen=True)
class Site:
    url: str
    session: BuiltSession
    hostile_id: str


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    db = tmp_path_factory.mktemp("inspector") / "compactor.db"
    with live_server(Settings(database_url=f"sqlite:///{db}", api_keys=KEYS)) as url:
        headers = {"Authorization": f"Bearer {ALPHA_KEY}"}
        with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
            session = build_compacted_session(client)
            hostile = build_hostile_session(client)
        yield Site(url, session, hostile)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield launched
        launched.close()


@dataclass
class Visit:
    page: Page
    errors: list[str]


@contextmanager
def visit(browser: Browser, javascript: bool = True) -> Iterator[Visit]:
    """A fresh browser context recording console errors and uncaught page errors."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, java_script_enabled=javascript
    )
    page = context.new_page()
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            errors.append(f"console {message.type}: {message.text}")

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    try:
        yield Visit(page, errors)
    finally:
        context.close()


def log_in(page: Page, site: Site, target: str, key: str = ALPHA_KEY) -> None:
    page.goto(site.url + target)
    assert "/ui/login" in page.url
    page.fill("#key", key)
    page.click("button[type=submit]")
    page.wait_for_load_state()


def numbers_in(text: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)]


def test_the_curve_shows_every_turn_and_every_compaction(
    site: Site, browser: Browser, tmp_path: Path
) -> None:
    session = site.session
    with visit(browser) as v:
        log_in(v.page, site, f"/ui/sessions/{session.id}")
        page = v.page
        assert page.url == f"{site.url}/ui/sessions/{session.id}"
        curve = page.locator("svg#token-curve")
        assert curve.is_visible()
        points = curve.locator("polyline.curve").get_attribute("points") or ""
        entries, records = len(session.messages), session.compactions
        # One vertex per turn, plus the point each compaction drops to.
        assert len(points.split()) == entries + len(records)
        assert curve.locator("circle.turn").count() == entries
        markers = curve.locator("g.compaction-marker")
        assert markers.count() == len(records)
        for i, record in enumerate(records):
            title = markers.nth(i).locator("title").text_content() or ""
            assert record["tokens_before"] in numbers_in(title)
            assert record["tokens_after"] in numbers_in(title)
        legend = page.locator(".compaction-legend li")
        assert legend.count() == len(records)
        first = f"{records[0]['tokens_before']:,} → {records[0]['tokens_after']:,}"
        assert first in legend.first.inner_text()
        # Hovering a marker shows its numbers in the tooltip.
        markers.nth(1).locator("circle.before").hover()
        tooltip = page.locator("#tooltip")
        assert tooltip.is_visible()
        assert f"{records[1]['tokens_before']:,} → {records[1]['tokens_after']:,}" in (
            tooltip.inner_text()
        )
        threshold = page.locator("svg .threshold-label").text_content()
        assert threshold == "threshold 30.0k"
        page.screenshot(path=str(tmp_path / "inspector-session.png"), full_page=False)
        curve.screenshot(path=str(tmp_path / "inspector-curve.png"))
        assert v.errors == []


def test_each_summary_sits_beside_the_previous_with_differences_marked(
    site: Site, browser: Browser, tmp_path: Path
) -> None:
    session = site.session
    with visit(browser) as v:
        log_in(v.page, site, f"/ui/sessions/{session.id}")
        page = v.page
        articles = page.locator("article.compaction")
        assert articles.count() == len(session.compactions)
        second = page.locator("#compaction-2")
        added = second.locator(".current-summary ins")
        assert added.count() > 0
        assert added.first.inner_text().strip()
        assert second.locator(".previous-summary del").count() > 0
        # The right column is the second summary, the left one the first, verbatim.
        assert (
            second.locator(".current-summary pre").inner_text()
            == (session.compactions[1]["summary"])
        )
        assert (
            second.locator(".previous-summary pre").inner_text()
            == (session.compactions[0]["summary"])
        )
        folded = second.locator(".folded").inner_text()
        assert re.search(r"Folded entries \d+–\d+ \(\d+ entries\)", folded), folded
        second.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "inspector-diff.png"))
        assert v.errors == []


def test_the_transcript_pages_forward_and_back(
    site: Site, browser: Browser, tmp_path: Path
) -> None:
    session = site.session
    with visit(browser) as v:
        log_in(v.page, site, f"/ui/sessions/{session.id}")
        page = v.page
        entries = page.locator("ol.entries li.entry")
        assert entries.count() == 50
        assert entries.first.get_attribute("data-seq") == "0"
        page.locator("#transcript nav.pager a.next").first.click()
        page.wait_for_load_state()
        assert "page=2" in page.url
        assert entries.count() == 50
        assert entries.first.get_attribute("data-seq") == "50"
        assert "page 2 of 6" in page.locator("#transcript .page-info").first.inner_text()
        page.screenshot(path=str(tmp_path / "inspector-transcript-page-2.png"))
        page.locator("#transcript nav.pager a.prev").first.click()
        page.wait_for_load_state()
        assert entries.first.get_attribute("data-seq") == "0"
        # Entries the summaries absorbed say which compaction folded them.
        assert "folded into summary #1" in entries.first.inner_text()
        assert v.errors == []


def test_markup_in_a_transcript_renders_as_text(
    site: Site, browser: Browser, tmp_path: Path
) -> None:
    with visit(browser) as v:
        log_in(v.page, site, f"/ui/sessions/{site.hostile_id}")
        page = v.page
        assert page.evaluate("typeof window.__pwned") == "undefined"
        first_entry = page.locator("ol.entries li.entry").first.inner_text()
        assert HOSTILE_TEXT in first_entry
        summary = page.locator("#compaction-1 .current-summary pre").inner_text()
        assert "<script>" in summary
        page.screenshot(path=str(tmp_path / "inspector-hostile.png"))
        assert v.errors == []


def test_login_sets_a_strict_cookie_and_logout_forgets_it(
    site: Site, browser: Browser, tmp_path: Path
) -> None:
    with visit(browser) as v:
        page = v.page
        page.goto(site.url + "/ui")
        assert page.url.startswith(f"{site.url}/ui/login")
        page.fill("#key", "key-wrong-0123456789")
        page.click("button[type=submit]")
        assert page.locator(".error").inner_text() == "That API key is not valid."
        page.screenshot(path=str(tmp_path / "inspector-login-refused.png"))
        page.fill("#key", ALPHA_KEY)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        assert page.url == f"{site.url}/ui"
        assert page.locator("tr.session-row").count() == 2
        page.screenshot(path=str(tmp_path / "inspector-sessions.png"))
        page.click("header.top button[type=submit]")
        page.wait_for_load_state()
        page.fill("#key", BETA_KEY)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        assert page.url == f"{site.url}/ui"
        # The other tenant's sessions are not listed.
        assert page.locator("tr.session-row").count() == 0
        assert "signed in as beta" in page.locator("header.top").inner_text()
        (cookie,) = page.context.cookies()
        assert cookie["httpOnly"] is True
        assert cookie["sameSite"] == "Strict"
        assert cookie["path"] == "/ui"
        assert cookie["secure"] is False  # plain http on loopback
        assert cookie["value"] not in (ALPHA_KEY, BETA_KEY)
        page.click("header.top button[type=submit]")
        page.wait_for_load_state()
        assert "/ui/login" in page.url
        assert page.context.cookies() == []
        page.goto(site.url + "/ui")
        assert "/ui/login" in page.url
        # The only console error is the browser noting the refused key (a 401 answer).
        assert all("401" in e for e in v.errors), v.errors


def test_the_page_reads_with_scripts_off(site: Site, browser: Browser) -> None:
    session = site.session
    with visit(browser, javascript=False) as v:
        log_in(v.page, site, f"/ui/sessions/{session.id}")
        page = v.page
        assert page.locator("svg#token-curve g.compaction-marker").count() == len(
            session.compactions
        )
        text = page.locator("main").inner_text()
        for record in session.compactions:
            assert f"{record['tokens_before']:,}" in text
            assert f"{record['tokens_after']:,}" in text
        assert f"Compactions ({len(session.compactions)})" in text
        assert v.errors == []


def test_a_cookie_saved_before_logout_no_longer_opens_the_inspector(
    site: Site, browser: Browser
) -> None:
    """Issue 21.6: logout revokes the login on the server, not only in this browser."""
    with visit(browser, javascript=False) as v:
        page = v.page
        log_in(page, site, "/ui")
        assert page.url == f"{site.url}/ui"
        (saved,) = page.context.cookies()
        page.click("header.top button[type=submit]")
        page.wait_for_load_state()
        assert "/ui/login" in page.url
        assert page.context.cookies() == []
        # A copy of the cookie kept from before (another tab's, a thief's) is put back.
        page.context.add_cookies([saved])
        page.goto(site.url + "/ui")
        assert "/ui/login" in page.url
        assert page.locator("#key").is_visible()
        # Logging in again works and gives a different cookie.
        page.fill("#key", ALPHA_KEY)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        assert page.url == f"{site.url}/ui"
        (fresh,) = page.context.cookies()
        assert fresh["value"] != saved["value"]
        assert v.errors == []


def test_the_revert_and_fork_buttons_work_without_scripts(site: Site, browser: Browser) -> None:
    headers = {"Authorization": f"Bearer {ALPHA_KEY}"}
    turns = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"turn {i}: we keep working on the parser module. " * 8,
        }
        for i in range(30)
    ]
    with httpx.Client(base_url=site.url, headers=headers, timeout=120) as client:
        body = {"trigger_tokens": 600, "keep_recent_tokens": 200}
        sid = client.post("/sessions", json=body).json()["id"]
        client.post(f"/sessions/{sid}/messages", json={"messages": turns})
        assert client.post(f"/sessions/{sid}/compact", json={}).json()["compacted"]
        # Another site's page posting the same form is refused, and nothing changes.
        record = client.get(f"/sessions/{sid}/compactions").json()["compactions"][0]
        forged = client.post(
            f"/ui/sessions/{sid}/compactions/{record['id']}/revert",
            headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
        )
        assert forged.status_code == 403
        assert len(client.get(f"/sessions/{sid}/compactions").json()["compactions"]) == 1
    with visit(browser, javascript=False) as v:
        page = v.page
        log_in(page, site, f"/ui/sessions/{sid}")
        page.click("form.revert button[type=submit]")
        page.wait_for_load_state()
        assert f"/ui/sessions/{sid}" in page.url
        headings = page.locator("article.compaction h3").all_inner_texts()
        assert [h.split(" · ")[1] for h in headings] == ["manual", "revert"]
        page.fill("form.fork input[name=at_seq]", "3")
        page.click("form.fork button[type=submit]")
        page.wait_for_load_state()
        fork_id = page.url.rsplit("/", 1)[-1]
        assert fork_id != sid and "/ui/sessions/" in page.url
        assert page.locator("li.entry").count() == 4
        assert v.errors == []
    with httpx.Client(base_url=site.url, headers=headers) as client:
        fork = client.get(f"/sessions/{fork_id}").json()
        assert fork["message_count"] == 4 and fork["metadata"]["forked_from"]["session_id"] == sid


def test_the_cost_section_shows_tokens_and_money(site: Site, browser: Browser) -> None:
    # Built through the REST API with the extractive summarizer: nothing was billed, and the
    # page says so in tokens and dollars (the proxied case is in test_cost_ledger.py).
    session = site.session
    with visit(browser) as v:
        log_in(v.page, site, f"/ui/sessions/{session.id}")
        section = v.page.locator("section#cost")
        assert section.is_visible()
        text = section.inner_text()
        assert "upstream" in text.lower() and "summarizer" in text.lower()
        assert "cache read" in text.lower()
        assert v.page.locator("section#cost .cost-total").inner_text() == "$0.0000"
        assert v.errors == []
