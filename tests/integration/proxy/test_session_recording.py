"""A bound session records a reply only when the upstream finished it (SPEC §10): a
stream that ends without its final event leaves no half reply in the transcript, and
the next turn goes on as if that one had failed."""

from __future__ import annotations

from typing import Any

import httpx

from tests.integration.fake_upstreams import Answer, FakeUpstream
from tests.integration.proxy.test_sessions import new_session, transcript


def _deltas(*texts: str) -> list[tuple[str | None, Any]]:
    return [(None, {"choices": [{"index": 0, "delta": {"content": t}}]}) for t in texts]


def test_a_stream_cut_before_its_end_records_no_reply_and_the_next_turn_works(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    sid = new_session(proxy_url, model="gpt-4")
    # Three deltas, then a clean end of the stream: no finish_reason and no [DONE].
    upstream.script(Answer(events=_deltas("tok0 ", "tok1 ", "tok2 ")))
    headers = {"X-Compactor-Session": sid}
    first = [{"role": "user", "content": "first question"}]
    with httpx.stream(
        "POST",
        f"{proxy_url}/v1/chat/completions",
        json={"model": "gpt-4", "messages": first, "stream": True},
        headers=headers,
    ) as answer:
        relayed = b"".join(answer.iter_bytes())
    assert b"tok2" in relayed  # the caller got every byte the upstream sent
    assert [m["role"] for m in transcript(proxy_url, sid)] == ["user"]

    # The caller retries the turn; the question is not recorded twice, the reply once.
    retry = httpx.post(
        f"{proxy_url}/v1/chat/completions",
        json={"model": "gpt-4", "messages": first},
        headers=headers,
    )
    assert retry.status_code == 200
    stored = transcript(proxy_url, sid)
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert "tok" not in str(stored[1]["content"])
