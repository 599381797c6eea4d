"""Proxy mode (SPEC §10) as the official SDKs see it: the same answers, errors and
streams as the upstream's, with credentials passed through and X-Compactor-* headers."""

from __future__ import annotations

import logging
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from app.settings import Settings
from tests.integration.fake_upstreams import Answer, FakeUpstream
from tests.integration.live_server import live_service
from tests.integration.proxy.clients import anthropic_client, openai_client
from tests.integration.proxy.conftest import proxy_settings


def test_chat_completions_pass_through_with_every_field(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    client = openai_client(proxy_url, **{"OpenAI-Organization": "org-1"})
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4",
        messages=[{"role": "user", "content": "hi"}],
        temperature=0.2,
        extra_body={"vendor_field": {"kept": True}},
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == "Reply to 1 items."
    assert raw.headers["x-compactor-compacted"] == "false"
    assert int(raw.headers["x-compactor-tokens-before"]) > 0
    names = [name for name, _ in raw.headers.multi_items()]
    assert names.count("date") == 1 and names.count("server") == 1
    sent = upstream.received[-1]
    assert sent.path == "/v1/chat/completions"
    assert sent.body["vendor_field"] == {"kept": True} and sent.body["temperature"] == 0.2
    assert sent.headers["authorization"] == "Bearer sk-caller"
    assert sent.headers["openai-organization"] == "org-1"


def test_anthropic_messages_pass_through(proxy_url: str, upstream: FakeUpstream) -> None:
    client = anthropic_client(proxy_url)
    message = client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=100,
        system="Be brief.",
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"anthropic-beta": "some-beta-2025", "x-api-key": "sk-ant-explicit"},
    )
    assert message.content[0].type == "text" and message.content[0].text == "Reply to 1 items."
    sent = upstream.received[-1]
    assert sent.path == "/v1/messages"
    # The SDK's own credential header and an explicit x-api-key both arrive unchanged.
    assert sent.headers["authorization"] == "Bearer sk-ant-caller"
    assert sent.headers["x-api-key"] == "sk-ant-explicit"
    assert sent.headers["anthropic-beta"] == "some-beta-2025"
    assert "anthropic-version" in sent.headers
    assert sent.body["system"] == "Be brief."


def test_responses_pass_through(proxy_url: str, upstream: FakeUpstream) -> None:
    client = openai_client(proxy_url)
    response = client.responses.create(model="gpt-5", input="hi", instructions="Be brief.")
    assert response.output_text == "Reply to 1 items."
    assert upstream.received[-1].body == {
        "model": "gpt-5",
        "input": "hi",
        "instructions": "Be brief.",
    }


def test_models_are_forwarded(proxy_url: str, upstream: FakeUpstream) -> None:
    models = openai_client(proxy_url).models.list()
    assert [m.id for m in models.data] == ["gpt-4"]
    assert upstream.received[-1].path == "/v1/models"
    anthropic_client(proxy_url).models.list()
    assert upstream.received[-1].path == "/v1/models"
    assert upstream.received[-1].headers["authorization"] == "Bearer sk-ant-caller"
    assert "anthropic-version" in upstream.received[-1].headers


def test_upstream_errors_reach_the_sdk_unchanged(proxy_url: str, upstream: FakeUpstream) -> None:
    error = {"error": {"message": "bad temperature", "type": "invalid_request_error", "code": "x"}}
    upstream.script(Answer(400, error, headers={"x-request-id": "req_up_1"}))
    with pytest.raises(openai.BadRequestError) as caught:
        openai_client(proxy_url).chat.completions.create(
            model="gpt-4", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 400
    assert caught.value.body == error["error"]
    assert caught.value.response.headers["x-request-id"] == "req_up_1"
    upstream.script(
        Answer(
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
            headers={"retry-after": "7"},
        )
    )
    with pytest.raises(anthropic.RateLimitError) as limited:
        anthropic_client(proxy_url).messages.create(
            model="claude-sonnet-4-5", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow"},
    }


def test_a_body_that_is_not_json_goes_to_the_upstream_as_is(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    upstream.script(Answer(400, {"error": {"message": "could not parse", "type": "invalid"}}))
    answer = httpx.post(f"{proxy_url}/v1/chat/completions", content=b"{not json")
    assert answer.status_code == 400 and answer.json()["error"]["message"] == "could not parse"
    assert upstream.received[-1].body == "{not json"


def test_unconfigured_upstream_is_a_clear_400_not_to_retry(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}")
    with live_service(settings) as url:
        answer = httpx.post(f"{url}/v1/messages", json={"model": "m", "messages": []})
    assert answer.status_code == 400 and answer.headers["x-should-retry"] == "false"
    assert "COMPACTOR_UPSTREAM_ANTHROPIC_URL" in answer.json()["error"]["message"]


def test_service_key_travels_in_x_compactor_key(tmp_path: Path, upstream: FakeUpstream) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'c.db'}",
        upstream_openai_url=f"{upstream.base_url}/v1",
        api_keys="team:service-key-1",
    )
    with live_service(settings) as url:
        with pytest.raises(openai.AuthenticationError):
            openai_client(url).chat.completions.create(
                model="gpt-4", messages=[{"role": "user", "content": "hi"}]
            )
        keyed = openai_client(url, **{"X-Compactor-Key": "service-key-1"})
        keyed.chat.completions.create(model="gpt-4", messages=[{"role": "user", "content": "hi"}])
    sent = upstream.received[-1].headers
    assert sent["authorization"] == "Bearer sk-caller"
    assert "x-compactor-key" not in sent


def test_a_compressed_answer_is_relayed_decoded(proxy_url: str, upstream: FakeUpstream) -> None:
    import gzip
    import json

    payload = gzip.compress(json.dumps({"object": "list", "data": []}).encode())
    upstream.responder = lambda received: Answer(
        json=None, headers={"content-encoding": "gzip"}, raw_body=payload
    )
    answer = httpx.get(f"{proxy_url}/v1/models", headers={"accept-encoding": "identity"})
    assert answer.status_code == 200
    assert "content-encoding" not in answer.headers
    assert answer.json() == {"object": "list", "data": []}


def test_native_mode_forwards_the_history_as_received(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    history = [{"role": "user", "content": "word " * 9_000}]  # over gpt-4's threshold
    client = openai_client(proxy_url, **{"X-Compactor-Mode": "native"})
    raw = client.chat.completions.with_raw_response.create(model="gpt-4", messages=history)
    assert raw.headers["x-compactor-compacted"] == "false"
    assert upstream.received[-1].body["messages"] == history
    with pytest.raises(openai.BadRequestError) as caught:
        openai_client(proxy_url, **{"X-Compactor-Mode": "sideways"}).chat.completions.create(
            model="gpt-4", messages=history
        )
    assert "X-Compactor-Mode" in str(caught.value.body)


def test_credentials_are_neither_logged_nor_stored(
    tmp_path: Path, upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = proxy_settings(tmp_path, upstream)
    with live_service(settings) as url:
        sid = httpx.post(f"{url}/sessions", json={}).json()["id"]
        client = openai_client(url, **{"X-Compactor-Session": sid})
        client.chat.completions.create(model="gpt-4", messages=[{"role": "user", "content": "hi"}])
        anthropic_client(url).messages.create(
            model="claude-sonnet-4-5", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    assert upstream.received[0].headers["authorization"] == "Bearer sk-caller"
    assert "sk-caller" not in caplog.text and "sk-ant-caller" not in caplog.text
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("compactor.db*"))
    assert b"sk-caller" not in stored and b"sk-ant-caller" not in stored
