"""Binding is atomic and idempotent (SPEC §10, issue 21.1): the same bound request (same
body, or the same `Idempotency-Key`) sent again while the first is still in flight, or
after it, records the turn once and the reply once — whatever the timing and whichever
replica answers it. Two replicas (two app servers) share one store, as in production."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from functools import partial
from typing import Any

import httpx
import pytest

from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry
from tests.integration.fake_upstreams import Answer, FakeUpstream, Received
from tests.live_server import live_server

TRIALS = 10
WAIT_SECONDS = 20.0


@pytest.fixture
def replicas(
    database_url: str, upstream: FakeUpstream, tokenizers: TokenizerRegistry
) -> Iterator[tuple[str, str]]:
    """Two app servers on one database in front of one upstream."""
    settings = Settings(database_url=database_url, upstream_openai_url=f"{upstream.base_url}/v1")
    with ExitStack() as stack:
        first = stack.enter_context(live_server(settings, tokenizers=tokenizers))
        second = stack.enter_context(live_server(settings, tokenizers=tokenizers))
        yield first, second


def _held_until_both_arrived(upstream: FakeUpstream) -> threading.Barrier:
    """The upstream answers no copy of the request before both copies reached it: the
    first is still in flight when the second is bound (a slow upstream, without timing)."""
    both = threading.Barrier(2, timeout=WAIT_SECONDS)

    def respond(received: Received) -> Answer | None:
        if received.path.endswith("/chat/completions"):
            with contextlib.suppress(threading.BrokenBarrierError):
                both.wait()
        return None

    upstream.responder = respond
    return both


def _new_session(url: str) -> str:
    answer = httpx.post(f"{url}/sessions", json={"model": "gpt-4o"})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def _roles(url: str, sid: str) -> list[str]:
    answer = httpx.get(f"{url}/sessions/{sid}/transcript")
    return [m["role"] for m in answer.json()["messages"]]


def _chat(url: str, sid: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/chat/completions",
        json=body,
        headers={"X-Compactor-Session": sid, "Authorization": "Bearer sk-caller", **headers},
        timeout=60,
    )


def _in_flight_pair(
    first: Callable[[], httpx.Response],
    second: Callable[[], httpx.Response],
    upstream: FakeUpstream,
    already: int,
) -> list[httpx.Response]:
    """`first` now; `second` once the upstream holds the first, 300 ms later (the SDK's
    retry after a read timeout, sent to whichever replica the balancer picks)."""
    with ThreadPoolExecutor(2) as pool:
        one = pool.submit(first)
        deadline = time.monotonic() + WAIT_SECONDS
        while len(upstream.bodies("/chat/completions")) <= already:
            assert time.monotonic() < deadline, "the first copy never reached the upstream"
            time.sleep(0.01)
        time.sleep(0.3)
        two = pool.submit(second)
        return [one.result(), two.result()]


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_retry_on_another_replica_while_the_first_is_in_flight_records_the_turn_once(
    replicas: tuple[str, str], upstream: FakeUpstream
) -> None:
    one, two = replicas
    for trial in range(TRIALS):
        sid = _new_session(one)
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": f"question {trial}"}]}
        _held_until_both_arrived(upstream)
        already = len(upstream.bodies("/chat/completions"))
        answers = _in_flight_pair(
            partial(_chat, one, sid, body), partial(_chat, two, sid, body), upstream, already
        )
        assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
        assert _roles(one, sid) == ["user", "assistant"], f"trial {trial}"
        # Both copies forwarded the turn as it was: the question last, no reply before it.
        for sent in upstream.bodies("/chat/completions")[already:]:
            assert [m["role"] for m in sent["messages"]] == ["user"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_same_request_at_the_same_moment_on_two_replicas_records_the_turn_once(
    replicas: tuple[str, str], upstream: FakeUpstream
) -> None:
    one, two = replicas
    for trial in range(TRIALS):
        sid = _new_session(one)
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": f"question {trial}"}]}
        _held_until_both_arrived(upstream)
        start = threading.Barrier(2, timeout=WAIT_SECONDS)

        def send(
            url: str,
            sid: str = sid,
            body: dict[str, Any] = body,
            start: threading.Barrier = start,
        ) -> httpx.Response:
            start.wait()
            return _chat(url, sid, body)

        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(send, [one, two]))
        assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
        assert _roles(one, sid) == ["user", "assistant"], f"trial {trial}"


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_the_same_idempotency_key_records_the_turn_once_even_with_another_body(
    replicas: tuple[str, str], upstream: FakeUpstream
) -> None:
    one, two = replicas
    sid = _new_session(one)
    question = [{"role": "user", "content": "what changed?"}]
    _held_until_both_arrived(upstream)
    already = len(upstream.bodies("/chat/completions"))
    # A client that rebuilds its body on a retry (another temperature) but keeps its key.
    answers = _in_flight_pair(
        lambda: _chat(
            one, sid, {"model": "gpt-4o", "messages": question}, **{"Idempotency-Key": "turn-1"}
        ),
        lambda: _chat(
            two,
            sid,
            {"model": "gpt-4o", "messages": question, "temperature": 0.2},
            **{"Idempotency-Key": "turn-1"},
        ),
        upstream,
        already,
    )
    assert [a.status_code for a in answers] == [200, 200]
    assert _roles(one, sid) == ["user", "assistant"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_retry_after_the_reply_was_recorded_forwards_the_turn_as_it_was_and_records_nothing(
    replicas: tuple[str, str], upstream: FakeUpstream
) -> None:
    one, two = replicas
    sid = _new_session(one)
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "first question"}]}
    assert _chat(one, sid, body).status_code == 200
    assert _roles(one, sid) == ["user", "assistant"]
    # The caller never saw the answer (its connection broke) and sends the turn again.
    again = _chat(two, sid, body)
    assert again.status_code == 200
    assert _roles(one, sid) == ["user", "assistant"]
    # The model answers the question again, not a conversation ending in its own reply.
    sent = upstream.bodies("/chat/completions")[-1]
    assert [m["role"] for m in sent["messages"]] == ["user"]
    # The next turn goes on from the recorded reply.
    reply = httpx.get(f"{one}/sessions/{sid}/transcript").json()["messages"][1]
    follow_up = {
        "model": "gpt-4o",
        "messages": [*body["messages"], reply, {"role": "user", "content": "second question"}],
    }
    assert _chat(two, sid, follow_up).status_code == 200
    assert _roles(one, sid) == ["user", "assistant", "user", "assistant"]


def _streamed_chat(url: str, sid: str, body: dict[str, Any]) -> httpx.Response:
    with httpx.stream(
        "POST",
        f"{url}/v1/chat/completions",
        json=body,
        headers={"X-Compactor-Session": sid, "Authorization": "Bearer sk-caller"},
        timeout=60,
    ) as answer:
        answer.read()
    return answer


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_streamed_retry_in_flight_records_the_turn_and_the_streamed_reply_once(
    replicas: tuple[str, str], upstream: FakeUpstream
) -> None:
    one, two = replicas
    sid = _new_session(one)
    body = {
        "model": "gpt-4o",
        "stream": True,
        "messages": [{"role": "user", "content": "stream it"}],
    }
    _held_until_both_arrived(upstream)
    already = len(upstream.bodies("/chat/completions"))
    answers = _in_flight_pair(
        partial(_streamed_chat, one, sid, body),
        partial(_streamed_chat, two, sid, body),
        upstream,
        already,
    )
    assert [a.status_code for a in answers] == [200, 200]
    assert all(b"[DONE]" in a.content for a in answers)
    messages = httpx.get(f"{one}/sessions/{sid}/transcript").json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["content"] == "Reply to 1 items. one two three"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_idempotency_key_reused_for_other_messages_is_a_clear_422(
    replicas: tuple[str, str], upstream: FakeUpstream
) -> None:
    one, _ = replicas
    sid = _new_session(one)
    first = {"model": "gpt-4o", "messages": [{"role": "user", "content": "first"}]}
    assert _chat(one, sid, first, **{"Idempotency-Key": "k"}).status_code == 200
    other = {"model": "gpt-4o", "messages": [{"role": "user", "content": "something else"}]}
    refused = _chat(one, sid, other, **{"Idempotency-Key": "k"})
    assert refused.status_code == 422
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert "Idempotency-Key" in refused.json()["detail"]
    assert _roles(one, sid) == ["user", "assistant"]
