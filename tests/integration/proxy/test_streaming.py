"""Streams relayed event by event (never buffered) through the SDKs' streaming helpers,
and a caller that hangs up cancels the upstream request. No timing thresholds: the fake
upstream holds its last event until the test has seen the first one."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.integration.fake_upstreams import (
    Answer,
    FakeUpstream,
    anthropic_events,
    chat_events,
    responses_events,
)
from tests.integration.proxy.clients import anthropic_client, openai_client

WORDS = [" alpha", " beta", " gamma"]
USER = [{"role": "user", "content": "stream please"}]


def test_chat_stream_helper_gets_the_first_event_before_the_last_is_sent(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    upstream.script(Answer(events=chat_events(WORDS), gate_last=True, pause_seconds=0.02))
    client = openai_client(proxy_url)
    seen_last_before_first: bool | None = None
    text = ""
    with client.chat.completions.stream(model="gpt-4", messages=USER) as stream:
        for event in stream:
            if event.type == "content.delta" and seen_last_before_first is None:
                seen_last_before_first = upstream.sent_last.is_set()
                upstream.release.set()
            if event.type == "content.delta":
                text += event.delta
        final = stream.get_final_completion()
    assert seen_last_before_first is False
    assert text == "".join(WORDS)
    assert final.choices[0].message.content == "".join(WORDS)


def test_chat_stream_true_with_raw_iteration(proxy_url: str, upstream: FakeUpstream) -> None:
    upstream.script(Answer(events=chat_events(WORDS), gate_last=True))
    stream = openai_client(proxy_url).chat.completions.create(
        model="gpt-4",
        messages=USER,
        stream=True,
    )
    assert stream.response.headers["x-compactor-compacted"] == "false"
    assert stream.response.headers["content-type"].startswith("text/event-stream")
    chunks = iter(stream)
    first = next(chunks)
    assert not upstream.sent_last.is_set()
    upstream.release.set()
    rest = list(chunks)
    assert first.choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in rest) == "".join(WORDS)


def test_anthropic_stream_helper_is_relayed_as_it_arrives(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    upstream.script(Answer(events=anthropic_events(WORDS), gate_last=True, pause_seconds=0.02))
    client = anthropic_client(proxy_url)
    first_text_before_last: bool | None = None
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=50, messages=USER) as stream:
        for _text in stream.text_stream:
            if first_text_before_last is None:
                first_text_before_last = not upstream.sent_last.is_set()
                upstream.release.set()
        message = stream.get_final_message()
    assert first_text_before_last is True
    assert message.content[0].type == "text" and message.content[0].text == "".join(WORDS)
    assert message.stop_reason == "end_turn"


def test_responses_stream_helper_is_relayed_as_it_arrives(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    upstream.script(Answer(events=responses_events(WORDS), gate_last=True, pause_seconds=0.02))
    client = openai_client(proxy_url)
    first_delta_before_last: bool | None = None
    with client.responses.stream(model="gpt-5", input=USER) as stream:
        for event in stream:
            if event.type == "response.output_text.delta" and first_delta_before_last is None:
                first_delta_before_last = not upstream.sent_last.is_set()
                upstream.release.set()
        final = stream.get_final_response()
    assert first_delta_before_last is True
    assert final.output_text == "".join(WORDS)


@pytest.mark.parametrize("api", ["chat", "anthropic", "responses"])
def test_a_caller_that_hangs_up_cancels_the_upstream_request(
    proxy_url: str, upstream: FakeUpstream, api: str
) -> None:
    events = {"chat": chat_events, "anthropic": anthropic_events, "responses": responses_events}
    upstream.script(Answer(events=events[api](WORDS), hold_after=2))
    if api == "chat":
        stream = openai_client(proxy_url).chat.completions.create(
            model="gpt-4",
            messages=USER,
            stream=True,
        )
    elif api == "anthropic":
        stream = anthropic_client(proxy_url).messages.create(
            model="claude-sonnet-4-5",
            max_tokens=50,
            messages=USER,
            stream=True,
        )
    else:
        stream = openai_client(proxy_url).responses.create(
            model="gpt-5",
            input=USER,
            stream=True,
        )
    next(iter(stream))
    assert not upstream.client_hung_up.is_set()
    stream.close()
    assert upstream.client_hung_up.wait(15), "the upstream never saw the caller hang up"


def test_an_error_answer_to_a_stream_request_is_the_upstreams_error(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    error = {"error": {"message": "no such model", "type": "invalid_request_error", "code": None}}
    upstream.script(Answer(404, error))
    with pytest.raises(openai.NotFoundError) as caught:
        openai_client(proxy_url).chat.completions.create(
            model="nope",
            messages=USER,
            stream=True,
        )
    assert caught.value.body == error["error"]


def test_a_non_streaming_caller_that_hangs_up_cancels_the_upstream(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    upstream.script(Answer(hold_before_headers=True))
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{proxy_url}/v1/chat/completions",
            json={"model": "gpt-4", "messages": USER},
            timeout=httpx.Timeout(10, read=0.5),
        )
    assert upstream.client_hung_up.wait(15)
