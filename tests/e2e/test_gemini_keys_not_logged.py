"""The caller's Gemini key (`x-goog-api-key`, or `?key=` in the query) reaches the
upstream and never the logs of a real `compactor serve`, at its most verbose level."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.e2e.serve_process import serve
from tests.integration.fake_upstreams import FakeUpstream

KEY = "AIza-never-logged-0123456789"


def test_gemini_keys_are_forwarded_and_never_logged(tmp_path: Path) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    with FakeUpstream() as upstream:
        env: dict[str, str | None] = {"COMPACTOR_UPSTREAM_GEMINI_URL": upstream.base_url}
        with serve(tmp_path, "--log-level", "debug", env=env) as served:
            for suffix in (":generateContent", ":streamGenerateContent", ":countTokens"):
                url = f"{served.url}/v1beta/models/gemini-2.5-flash{suffix}?alt=sse&key={KEY}"
                answer = httpx.post(url, json=body, headers={"x-goog-api-key": KEY}, timeout=60)
                assert answer.status_code == 200, answer.text
            # Refused ones too: an unknown version and a malformed count.
            assert (
                httpx.post(f"{served.url}/v7/models/m:generateContent?key={KEY}").status_code == 404
            )
            bad = httpx.post(
                f"{served.url}/v1beta/models/m:countTokens?key={KEY}", content=b"{", timeout=60
            )
            assert bad.status_code == 400
        log = served.log_text()
    assert [r.headers["x-goog-api-key"] for r in upstream.received] == [KEY, KEY]
    assert all(f"key={KEY}" in r.path for r in upstream.received)
    assert '"route": "/{api_version}/models/{model}:generateContent"' in log or (
        "/v1beta/models/gemini-2.5-flash:generateContent" in log
    )
    assert KEY not in log
