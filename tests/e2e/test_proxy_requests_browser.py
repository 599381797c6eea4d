"""The inspector's recent stateless proxy requests (SPEC §18) in a real headless browser
(Debian's chromium through Playwright): what the proxy decided for each request, the
viewer's own tenant only, no message content unless configured."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.settings import Settings
from tests.integration.fake_upstreams import FakeUpstream

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    _message = (
        f"{CHROMIUM} not found (apt-get install -y chromium): the proxy requests BROWSER "
        "TESTS are SKIPPED on this machine"
    )
    if os.environ.get("CI"):
        raise RuntimeError(_message + " — CI must run them")
    pytest.skip(_message, allow_module_level=True)

from playwright.sync_api import Browser, sync_playwright  # noqa: E402

from tests.e2e.test_inspector_browser import CHROMIUM_ARGS, live_server  # noqa: E402

ALPHA, BETA = "key-alpha-0123456789", "key-beta-0123456789"
SECRET_WORDS = "the-launch-code-is-4711"


def turns(count: int, words: int = 250) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"{SECRET_WORDS} turn {i} " + " ".join(f"w{i}x{j}" for j in range(words)),
        }
        for i in range(count)
    ]


@dataclass
class Site:
    url: str
    compacted: httpx.Response
    under: httpx.Response


def _chat(url: str, key: str, messages: list[dict[str, Any]]) -> httpx.Response:
    answer = httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": "gpt-4", "messages": messages},
        headers={"X-Compactor-Key": key, "Authorization": "Bearer sk-caller"},
        timeout=60,
    )
    answer.raise_for_status()
    return answer


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    db = tmp_path_factory.mktemp("requests") / "c.db"
    with FakeUpstream() as upstream:
        settings = Settings(
            database_url=f"sqlite:///{db}",
            api_keys=f"alpha:{ALPHA},beta:{BETA}",
            upstream_openai_url=f"{upstream.base_url}/v1",
        )
        with live_server(settings) as url:
            compacted = _chat(url, ALPHA, turns(40))
            under = _chat(url, ALPHA, turns(2, words=20))
            _chat(url, BETA, turns(2, words=20))
            yield Site(url, compacted, under)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield launched
        launched.close()


def test_the_viewer_sees_its_own_recent_decisions_without_content(
    site: Site, browser: Browser, tmp_path: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    page.goto(f"{site.url}/ui/requests")
    page.fill("#key", ALPHA)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    assert page.url == f"{site.url}/ui/requests"
    rows = page.locator("tr.request-row")
    assert rows.count() == 2  # alpha's two; beta's request is not shown
    newest, oldest = rows.nth(0), rows.nth(1)

    assert "under the threshold" in newest.locator(".decision").inner_text()
    assert newest.locator(".tokens-before").inner_text() == (
        f"{int(site.under.headers['x-compactor-tokens-before']):,}"
    )
    assert site.under.headers["x-request-id"] in newest.inner_text()

    assert "compacted" in (oldest.get_attribute("class") or "")
    assert "compacted" in oldest.locator(".decision").inner_text()
    before = int(site.compacted.headers["x-compactor-tokens-before"])
    after = int(site.compacted.headers["x-compactor-tokens-after"])
    assert oldest.locator(".tokens-before").inner_text() == f"{before:,}"
    assert oldest.locator(".tokens-after").inner_text() == f"{after:,}"
    assert oldest.locator(".threshold").inner_text() == "6,963"
    assert "gpt-4" in oldest.inner_text() and "chat_completions" in oldest.inner_text()
    assert SECRET_WORDS not in page.content()
    page.screenshot(path=str(tmp_path / "proxy-requests.png"), full_page=True)
    # The sessions page links here.
    page.goto(f"{site.url}/ui")
    page.click("a.recent-requests")
    page.wait_for_load_state()
    assert page.url == f"{site.url}/ui/requests"
    assert errors == []
    context.close()


def test_content_is_shown_only_when_configured(tmp_path: Path) -> None:
    with FakeUpstream() as upstream:
        settings = Settings(
            database_url=f"sqlite:///{tmp_path / 'c.db'}",
            upstream_openai_url=f"{upstream.base_url}/v1",
            inspector_show_content=True,
            inspector_recent_requests=3,
        )
        with live_server(settings) as url:
            for i in range(5):
                _chat(url, "", [{"role": "user", "content": f"{SECRET_WORDS} number {i}"}])
            page = httpx.get(f"{url}/ui/requests").text
    assert page.count('class="request-row') == 3  # bounded: the newest 3
    assert f"{SECRET_WORDS} number 4" in page and f"{SECRET_WORDS} number 1" not in page
