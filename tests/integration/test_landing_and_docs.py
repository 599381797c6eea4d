"""`GET /` points to the inspector and the API reference (a page, or JSON when asked); the
reference pages and their assets are served by the service itself, with no CDN."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.api.routes.landing import wants_json
from app.main import create_app
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.fixture
def keyed(tmp_path: Path, tokenizers: TokenizerRegistry) -> TestClient:
    """API keys on: what stays public must say so."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'compactor.db'}", api_keys="ops:ops-key-12345"
    )
    return TestClient(create_app(settings, tokenizers=tokenizers))


def test_the_landing_page_links_the_inspector_and_the_docs(keyed: TestClient) -> None:
    with keyed:
        page = keyed.get("/", headers={"Accept": BROWSER_ACCEPT})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["vary"] == "Accept"
    hrefs = re.findall(r'href="([^"]+)"', page.text)
    assert "/ui" in hrefs and "/docs" in hrefs
    assert "default-src 'none'" in page.headers["content-security-policy"]


@pytest.mark.parametrize(
    ("accept", "json_wanted"),
    [
        ("application/json", True),
        ("application/json, text/plain, */*", True),
        ("text/html;q=0.5, application/json", True),
        (BROWSER_ACCEPT, False),
        ("*/*", False),
        ("", False),
        ("not a media type", False),
        ("application", False),
        # A q that is not a number counts as 1 (python-mimeparse).
        ("application/json;q=nope", True),
    ],
)
def test_json_only_when_the_client_prefers_it(accept: str, json_wanted: bool) -> None:
    assert wants_json(accept) is json_wanted


def test_the_landing_answer_as_json(keyed: TestClient) -> None:
    with keyed:
        answer = keyed.get("/", headers={"Accept": "application/json"})
        unparsable = keyed.get("/", headers={"Accept": "json, text"})
    assert answer.status_code == 200
    body = answer.json()
    assert body["service"] == "context-compactor"
    assert body["links"]["ui"] == "/ui" and body["links"]["docs"] == "/docs"
    assert body["links"]["openapi"] == "/openapi.json"
    # A header nobody can parse is not a 500: the page.
    assert unparsable.status_code == 200
    assert unparsable.headers["content-type"].startswith("text/html")


def test_links_follow_the_root_path_behind_a_prefix(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}"))
    with TestClient(app, root_path="/compactor") as client:
        links = client.get("/", headers={"Accept": "application/json"}).json()["links"]
        docs = client.get("/docs").text
    assert links["docs"] == "/compactor/docs"
    assert 'src="/compactor/docs/assets/swagger-ui-bundle.js"' in docs
    assert 'data-openapi-url="/compactor/openapi.json"' in docs


def test_the_reference_pages_load_nothing_from_another_host(keyed: TestClient) -> None:
    with keyed:
        pages = {path: keyed.get(path) for path in ("/docs", "/redoc")}
        script = keyed.get("/docs/swagger-init.js")
        assets = {
            name: keyed.get(f"/docs/assets/{name}")
            for name in ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js")
        }
    for path, page in pages.items():
        assert page.status_code == 200, path
        references = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert references and all(ref.startswith("/") for ref in references), references
        policy = page.headers["content-security-policy"]
        assert "script-src 'self';" in policy and "default-src 'none'" in policy
        assert "<script>" not in page.text  # no inline script: the CSP allows none
    assert script.headers["content-type"].startswith("text/javascript")
    assert "validatorUrl: null" in script.text
    for name, asset in assets.items():
        assert asset.status_code == 200, name
        assert len(asset.content) > 100_000, name


def test_the_openapi_document_does_not_list_the_pages(keyed: TestClient) -> None:
    with keyed:
        paths = keyed.get("/openapi.json").json()["paths"]
    assert not {"/", "/docs", "/redoc", "/docs/swagger-init.js"} & paths.keys()
