"""Inspector logins (issue 21.6): a random token the store knows, not a hash of the key;
it expires on the server, logout revokes it on every replica, a new login rotates it, and
state-changing /ui requests from another site are refused."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.main import create_app
from app.settings import Settings
from app.store.database import create_db_engine
from tests.live_server import live_server

ALPHA_KEY = "key-alpha-0123456789"
BETA_KEY = "key-beta-0123456789"
KEYS = f"alpha:{ALPHA_KEY},beta:{BETA_KEY}"
COOKIE = "compactor_ui"
STATE_KEY = "state-key-shared-by-both-replicas"


def keyed_settings(database_url: str, keys: str = KEYS) -> Settings:
    return Settings(database_url=database_url, api_keys=keys, state_key=STATE_KEY)


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[TestClient]:
    settings = keyed_settings(f"sqlite:///{tmp_path / 'logins.db'}")
    with TestClient(create_app(settings)) as client:
        yield client


def log_in(client: TestClient | httpx.Client, key: str = ALPHA_KEY) -> str:
    answer = client.post("/ui/login", data={"key": key, "next": "/ui"}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    value = answer.cookies[COOKIE]
    client.cookies.clear()
    return value


def post_with(
    client: TestClient | httpx.Client,
    path: str,
    value: str,
    data: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """POST `path` from a browser holding the cookie `value`."""
    client.cookies.clear()
    client.cookies.set(COOKIE, value)
    try:
        return client.post(path, data=data, headers=headers, follow_redirects=False)
    finally:
        client.cookies.clear()


def opens_ui(client: TestClient | httpx.Client, value: str) -> bool:
    """Whether this cookie value, sent by a browser that kept it, opens the sessions list."""
    client.cookies.clear()
    client.cookies.set(COOKIE, value)
    answer = client.get("/ui", follow_redirects=False)
    client.cookies.clear()
    if answer.status_code == 200:
        assert "signed in as" in answer.text
        return True
    assert answer.status_code == 303 and answer.headers["location"].startswith("/ui/login")
    return False


def test_the_cookie_is_a_random_token_not_a_hash_of_the_key(keyed: TestClient) -> None:
    first, second = log_in(keyed), log_in(keyed)
    assert first != second  # each login gets a token of its own
    for value in (first, second):
        assert value != hashlib.sha256(ALPHA_KEY.encode()).hexdigest()
        assert ALPHA_KEY not in value
        assert len(value) >= 40
        assert opens_ui(keyed, value)


def test_logout_revokes_the_saved_cookie(keyed: TestClient) -> None:
    value = log_in(keyed)
    other = log_in(keyed)
    assert opens_ui(keyed, value)
    out = post_with(keyed, "/ui/logout", value)
    assert out.status_code == 303
    # A browser (or a thief) that kept the value gets the login form now.
    assert not opens_ui(keyed, value)
    # Another browser's login stays.
    assert opens_ui(keyed, other)


def test_a_new_login_replaces_the_one_the_browser_had(keyed: TestClient) -> None:
    old = log_in(keyed)
    answer = post_with(keyed, "/ui/login", old, data={"key": ALPHA_KEY, "next": "/ui"})
    new = answer.cookies[COOKIE]
    assert new != old
    assert opens_ui(keyed, new)
    assert not opens_ui(keyed, old)


def test_an_expired_login_is_refused_by_the_server(tmp_path: Path) -> None:
    db = tmp_path / "logins.db"
    with TestClient(create_app(keyed_settings(f"sqlite:///{db}"))) as client:
        value = log_in(client)
        assert opens_ui(client, value)
        # The browser would drop the cookie at Max-Age; one that keeps it must not matter.
        past = (datetime.now(UTC) - timedelta(seconds=1)).strftime("%Y-%m-%d %H:%M:%S.%f")
        with sqlite3.connect(db) as raw:
            assert raw.execute("UPDATE ui_logins SET expires_at = ?", (past,)).rowcount == 1
        assert not opens_ui(client, value)


def test_a_login_ends_when_its_key_is_no_longer_configured(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'logins.db'}"
    with TestClient(create_app(keyed_settings(url))) as client:
        value = log_in(client)
        assert opens_ui(client, value)
    rotated = f"alpha:key-alpha-rotated-0123,beta:{BETA_KEY}"
    with TestClient(create_app(keyed_settings(url, rotated))) as client:
        assert not opens_ui(client, value)
    with TestClient(create_app(keyed_settings(url))) as client:
        assert opens_ui(client, value)  # the same key again (a restart): still logged in


def test_the_store_holds_no_cookie_and_no_key(tmp_path: Path) -> None:
    db = tmp_path / "logins.db"
    with TestClient(create_app(keyed_settings(f"sqlite:///{db}"))) as client:
        value = log_in(client)
    with sqlite3.connect(db) as raw:
        rows = raw.execute("SELECT * FROM ui_logins").fetchall()
    dumped = repr(rows)
    assert len(rows) == 1
    assert value not in dumped and ALPHA_KEY not in dumped
    assert hashlib.sha256(ALPHA_KEY.encode()).hexdigest() not in dumped


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site", "Origin": "http://other.testserver"},
        {"Origin": "null", "Sec-Fetch-Site": "cross-site"},
    ],
)
def test_state_changing_requests_from_another_site_are_refused(
    keyed: TestClient, headers: dict[str, str]
) -> None:
    value = log_in(keyed)
    out = post_with(keyed, "/ui/logout", value, headers=headers)
    assert out.status_code == 403, out.text
    assert "set-cookie" not in out.headers
    assert opens_ui(keyed, value)  # the cross-site logout did nothing
    login = keyed.post(
        "/ui/login", data={"key": ALPHA_KEY}, headers=headers, follow_redirects=False
    )
    assert login.status_code == 403
    assert "set-cookie" not in login.headers


def test_a_form_from_the_page_itself_still_works(keyed: TestClient) -> None:
    """What a browser with scripts off sends from the inspector's own forms."""
    for headers in (
        {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"},
        {"Origin": "null", "Sec-Fetch-Site": "same-origin"},
        {},  # an older browser: neither header
    ):
        value = log_in(keyed)
        out = post_with(keyed, "/ui/logout", value, headers=headers)
        assert out.status_code == 303, (headers, out.text)
        assert not opens_ui(keyed, value)


def test_logins_and_logouts_hold_across_replicas(database_url: str) -> None:
    """Two replicas on one database: a login made on one opens the other, and a logout on
    either revokes it on both."""
    settings = keyed_settings(database_url)
    with (
        live_server(settings) as first,
        live_server(settings) as second,
        httpx.Client(base_url=first) as one,
        httpx.Client(base_url=second) as two,
    ):
        value = log_in(one)
        assert opens_ui(one, value) and opens_ui(two, value)
        out = post_with(two, "/ui/logout", value)
        assert out.status_code == 303
        assert not opens_ui(one, value) and not opens_ui(two, value)
    engine = create_db_engine(database_url)
    try:
        with engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM ui_logins")).scalar() == 0
    finally:
        engine.dispose()
