"""`X-Compactor-Session`: a proxied conversation bound to a stored session. The new
messages of each request and the upstream's reply (whole or streamed) land in the
transcript exactly once; the session's context is what the upstream receives."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from tests.integration.fake_upstreams import Answer, FakeUpstream, context_too_long_openai
from tests.integration.proxy.clients import anthropic_client, openai_client


def new_session(proxy_url: str, **fields: Any) -> str:
    answer = httpx.post(f"{proxy_url}/sessions", json=fields)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def transcript(proxy_url: str, sid: str) -> list[Any]:
    return list(httpx.get(f"{proxy_url}/sessions/{sid}/transcript?limit=500").json()["messages"])


def long_text(i: int) -> str:
    return f"Step {i}: " + " ".join(f"detail{i}-{j}" for j in range(120))


def test_a_stateless_chat_caller_is_recorded_once_and_gets_the_session_context(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    sid = new_session(proxy_url, model="gpt-4", trigger_tokens=3_000, keep_recent_tokens=800)
    client = openai_client(proxy_url, **{"X-Compactor-Session": sid})
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    compacted = False
    for i in range(12):
        history.append({"role": "user", "content": long_text(i)})
        raw = client.chat.completions.with_raw_response.create(model="gpt-4", messages=history)
        assert raw.headers["x-compactor-session"] == sid
        history.append({"role": "assistant", "content": raw.parse().choices[0].message.content})
        sent = upstream.bodies("/chat/completions")[-1]["messages"]
        assert sent[0] == history[0] and sent[-1] == history[-2]
        if raw.headers["x-compactor-compacted"] == "true":
            compacted = True
            assert sent[1]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert compacted
    stored = transcript(proxy_url, sid)
    # Every message once, in order: the caller's and the upstream's replies alike.
    assert [m["content"] for m in stored] == [m["content"] for m in history]
    compactions = httpx.get(f"{proxy_url}/sessions/{sid}/compactions").json()["compactions"]
    assert compactions and all(c["trigger"] == "auto" for c in compactions)


def test_a_caller_may_send_only_its_new_messages(proxy_url: str, upstream: FakeUpstream) -> None:
    sid = new_session(proxy_url, model="claude-sonnet-4-5")
    client = anthropic_client(proxy_url, **{"X-Compactor-Session": sid})
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=50,
        system="Be brief.",
        messages=[{"role": "user", "content": "first"}],
    )
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=50,
        system="Be brief.",
        messages=[{"role": "user", "content": "second"}],
    )
    sent = upstream.bodies("/messages")[-1]
    assert sent["system"] == "Be brief."
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["messages"][0]["content"] == "first"
    assert sent["messages"][1]["content"] == [{"type": "text", "text": "Reply to 1 items."}]
    assert sent["messages"][2]["content"] == "second"


def test_streamed_replies_are_reassembled_into_the_transcript(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    sid = new_session(proxy_url, model="claude-sonnet-4-5")
    client = anthropic_client(proxy_url, **{"X-Compactor-Session": sid})
    with client.messages.stream(
        model="claude-sonnet-4-5", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        text = stream.get_final_text()
    chat = openai_client(proxy_url, **{"X-Compactor-Session": new_session(proxy_url)})
    with chat.chat.completions.stream(
        model="gpt-4", messages=[{"role": "user", "content": "hi"}]
    ) as chat_stream:
        chat_text = chat_stream.get_final_completion().choices[0].message.content
    stored = transcript(proxy_url, sid)
    assert stored[-1] == {"role": "assistant", "content": [{"type": "text", "text": text}]}
    chat_sid = chat.default_headers["X-Compactor-Session"]
    assert transcript(proxy_url, str(chat_sid))[-1] == {"role": "assistant", "content": chat_text}


def test_responses_output_items_join_the_session(proxy_url: str, upstream: FakeUpstream) -> None:
    sid = new_session(proxy_url, model="gpt-5", format="responses")
    client = openai_client(proxy_url, **{"X-Compactor-Session": sid})
    client.responses.create(model="gpt-5", input="plain text input", instructions="Be brief.")
    with client.responses.stream(
        model="gpt-5", input=[{"role": "user", "content": "streamed"}]
    ) as stream:
        stream.get_final_response()
    stored = transcript(proxy_url, sid)
    assert stored[0] == {"role": "user", "content": "plain text input"}
    assert stored[1]["type"] == "message" and stored[1]["id"] == "msg_up"
    assert stored[2] == {"role": "user", "content": "streamed"}
    assert stored[3]["type"] == "message" and stored[3]["content"][0]["type"] == "output_text"
    last = upstream.bodies("/responses")[-1]
    assert "instructions" not in last  # the body is forwarded as the caller sent it
    assert last["input"] == stored[:3]


def test_overflow_compacts_the_session_with_trigger_overflow(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    sid = new_session(proxy_url, model="gpt-4o", keep_recent_tokens=500)
    client = openai_client(proxy_url, **{"X-Compactor-Session": sid})
    for i in range(6):
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": long_text(i)}]
        )
    upstream.script(context_too_long_openai())
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "go"}])
    retry = upstream.bodies("/chat/completions")[-1]["messages"]
    assert retry[0]["content"].startswith(SUMMARY_MARKER_PREFIX) and retry[-1]["content"] == "go"
    compactions = httpx.get(f"{proxy_url}/sessions/{sid}/compactions").json()["compactions"]
    assert [c["trigger"] for c in compactions] == ["overflow"]


def test_an_unknown_session_is_404(proxy_url: str, upstream: FakeUpstream) -> None:
    client = openai_client(proxy_url, **{"X-Compactor-Session": "no-such-session"})
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-4", messages=[{"role": "user", "content": "x"}])
    assert upstream.received == []


def test_a_retry_after_an_upstream_failure_records_the_message_once(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    # Found by review: the new messages were appended before forwarding, so the SDK's
    # retry after a 500 recorded the user's message a second time.
    sid = new_session(proxy_url, model="gpt-4o")
    client = openai_client(proxy_url, **{"X-Compactor-Session": sid})
    question = [{"role": "user", "content": "first question"}]
    upstream.script(Answer(500, {"error": {"message": "boom", "type": "server_error"}}))
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="gpt-4o", messages=question)
    client.chat.completions.create(model="gpt-4o", messages=question)
    assert [(m["role"], m["content"]) for m in transcript(proxy_url, sid)][:1] == [
        ("user", "first question")
    ]
    assert [m["role"] for m in transcript(proxy_url, sid)] == ["user", "assistant"]
