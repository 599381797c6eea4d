"""The Gemini API through the proxy, driven by the official `google-genai` SDK (its
`http_options` base URL at the service) against a fake Gemini upstream on loopback:
whole and streamed answers, the caller's key forwarded and never logged, countTokens
answered locally, a multi-turn function-calling loop that crosses the threshold, session
binding, and overflow recovery."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import types

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from tests.integration.fake_providers import DEFAULT_SUMMARY, OpenAIFake, Reply
from tests.integration.fake_upstreams import (
    Answer,
    FakeUpstream,
    Received,
    context_too_long_gemini,
    gemini_events,
    gemini_response,
)
from tests.integration.live_server import live_service
from tests.integration.proxy.conftest import proxy_settings

KEY = "AIza-caller-secret-0123456789"
# A registry entry with a small window, so a few turns cross its threshold.
SMALL = "gemini-small-test"
SMALL_WINDOW = 8_192


def gemini_client(url: str, version: str | None = None, **headers: str) -> genai.Client:
    options = types.HttpOptions(base_url=url, headers=headers or None, api_version=version)
    return genai.Client(api_key=KEY, http_options=options)


@pytest.fixture
def summarizer() -> Iterator[OpenAIFake]:
    with OpenAIFake() as fake:
        yield fake


@pytest.fixture
def gemini_proxy(tmp_path: Path, upstream: FakeUpstream, summarizer: OpenAIFake) -> Iterator[str]:
    models = tmp_path / "models.json"
    entry = {"provider": "google", "context_window": SMALL_WINDOW, "max_output_tokens": 1024}
    models.write_text(json.dumps({"models": {SMALL: entry}}))
    settings = proxy_settings(
        tmp_path,
        upstream,
        prepare_ahead_ratio="off",  # the summary is made on the crossing turn
        summarizer="openai",
        summarizer_base_url=f"{summarizer.base_url}/v1",
        summarizer_model="gpt-4o-mini",
        summarizer_api_key="sk-summarizer",
        models_file=models,
    )
    with live_service(settings) as url:
        yield url


def test_generate_content_is_forwarded_with_the_callers_key(
    gemini_proxy: str, upstream: FakeUpstream
) -> None:
    client = gemini_client(gemini_proxy)
    reply = client.models.generate_content(
        model="gemini-2.5-flash",
        contents="Say hello.",
        config=types.GenerateContentConfig(system_instruction="Be brief.", max_output_tokens=50),
    )
    assert reply.text == "Reply to 1 items."
    sent = upstream.received[-1]
    # google-genai 3.x speaks v1 by default: forwarded to the version the caller named.
    assert sent.path == "/v1/models/gemini-2.5-flash:generateContent"
    assert sent.headers["x-goog-api-key"] == KEY
    assert sent.body["contents"] == [{"role": "user", "parts": [{"text": "Say hello."}]}]
    assert sent.body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    headers = reply.sdk_http_response.headers if reply.sdk_http_response else {}
    assert headers and headers["x-compactor-compacted"] == "false"
    client.close()


def test_v1beta_and_streaming_are_relayed(gemini_proxy: str, upstream: FakeUpstream) -> None:
    client = gemini_client(gemini_proxy, version="v1beta")
    chunks = list(client.models.generate_content_stream(model="gemini-2.5-pro", contents="hi"))
    assert "".join(c.text or "" for c in chunks) == "Reply to 1 items. one two three"
    assert upstream.received[-1].path == (
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    client.close()


def test_an_unknown_api_version_is_not_a_route(gemini_proxy: str) -> None:
    answer = httpx.post(f"{gemini_proxy}/v9/models/gemini-2.5-pro:generateContent", json={})
    assert answer.status_code == 404


def test_the_key_query_parameter_is_forwarded(gemini_proxy: str, upstream: FakeUpstream) -> None:
    # That it is never logged is checked on a real `compactor serve` (tests/e2e).
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    for suffix in (":generateContent", ":streamGenerateContent", ":countTokens"):
        url = f"{gemini_proxy}/v1beta/models/gemini-2.5-flash{suffix}?alt=sse&key={KEY}"
        answer = httpx.post(url, json=body)
        assert answer.status_code == 200, answer.text
    assert [r.path for r in upstream.received] == [
        f"/v1beta/models/gemini-2.5-flash:generateContent?alt=sse&key={KEY}",
        f"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key={KEY}",
    ]


def test_count_tokens_is_answered_locally(gemini_proxy: str, upstream: FakeUpstream) -> None:
    client = gemini_client(gemini_proxy)
    contents = [
        types.Content(role="user", parts=[types.Part(text="What is in the repo? " * 40)]),
        types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(name="ls", args={"path": "."}))],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        name="ls", response={"output": "app tests README.md"}
                    )
                )
            ],
        ),
    ]
    counted = client.models.count_tokens(model="gemini-2.5-flash", contents=contents)
    assert upstream.received == []
    wire = [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in contents]
    estimate = httpx.post(
        f"{gemini_proxy}/estimate", json={"messages": wire, "model": "gemini-2.5-flash"}
    ).json()
    assert counted.total_tokens == estimate["tokens"] > 40
    client.close()


def _tool_loop_responder(rounds: int) -> Any:
    """The model calls `read_file` twice in parallel for `rounds` turns, then answers."""

    # What the upstream sees may be compacted: the turn is counted here, not from it.
    turns = iter(range(1_000))

    def respond(received: Received) -> Answer | None:
        turn = next(turns)
        if turn >= rounds:
            return Answer(json=gemini_response("All files read."))
        parts = [
            {
                "functionCall": {"name": "read_file", "args": {"path": f"src/f{turn}_{k}.py"}},
                **(
                    {"thoughtSignature": base64.b64encode(f"sig-{turn}".encode()).decode()}
                    if k == 0
                    else {}
                ),
            }
            for k in range(2)
        ]
        return Answer(json=gemini_response("", parts=parts, finish="STOP"))

    return respond


def test_a_function_calling_loop_compacts_past_the_threshold(
    gemini_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    summarizer.script(*(Reply.ok(f"{DEFAULT_SUMMARY}\n- round {i}") for i in range(20)))
    upstream.responder = _tool_loop_responder(rounds=12)
    client = gemini_client(gemini_proxy)
    tools = [
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(
                    name="read_file",
                    description="Read a file.",
                    parameters_json_schema={
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                    },
                )
            ]
        )
    ]
    config = types.GenerateContentConfig(
        tools=tools,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    history: list[types.Content] = [
        types.Content(role="user", parts=[types.Part(text="Read every file and summarize.")])
    ]
    compacted = 0
    for _ in range(13):
        reply = client.models.generate_content(model=SMALL, contents=history, config=config)
        headers = reply.sdk_http_response.headers if reply.sdk_http_response else {}
        sent = upstream.received[-1].body["contents"]
        if headers and headers["x-compactor-compacted"] == "true":
            compacted += 1
            summary = sent[0]["parts"][0]["text"]
            assert summary.startswith(SUMMARY_MARKER_PREFIX)
            # The kept tail starts at a turn, never at a response whose call was folded.
            assert not any("functionResponse" in p for p in sent[1]["parts"])
            assert int(headers["x-compactor-tokens-after"]) < int(
                headers["x-compactor-tokens-before"]
            )
        candidate = reply.candidates[0] if reply.candidates else None
        assert candidate is not None and candidate.content is not None
        history.append(candidate.content)
        calls = reply.function_calls or []
        if not calls:
            break
        assert len(calls) == 2
        history.append(
            types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            name=call.name, response={"output": "x = 1\n" * 300}
                        )
                    )
                    for call in calls
                ],
            )
        )
    assert reply.text == "All files read."
    assert compacted >= 3
    # Stateless resends reuse the cached summary: far fewer summarizer calls than turns.
    assert 1 <= len(summarizer.received) < compacted
    # The signatures of the kept model turns reached the upstream where the model put them.
    last = upstream.received[-1].body["contents"]
    signed = [p for c in last for p in c["parts"] if "thoughtSignature" in p]
    assert signed and all("functionCall" in p for p in signed)
    client.close()


def test_a_bound_session_records_whole_and_streamed_replies(
    gemini_proxy: str, upstream: FakeUpstream
) -> None:
    session = httpx.post(f"{gemini_proxy}/sessions", json={"model": "gemini-2.5-flash"}).json()
    client = gemini_client(gemini_proxy, **{"X-Compactor-Session": session["id"]})
    history: list[types.Content] = [types.Content(role="user", parts=[types.Part(text="one")])]
    whole = client.models.generate_content(model="gemini-2.5-flash", contents=history)
    assert whole.candidates and whole.candidates[0].content
    history += [
        whole.candidates[0].content,
        types.Content(role="user", parts=[types.Part(text="two")]),
    ]
    streamed = list(
        client.models.generate_content_stream(model="gemini-2.5-flash", contents=history)
    )
    assert streamed
    context = httpx.get(f"{gemini_proxy}/sessions/{session['id']}/context").json()
    assert context["format"] == "gemini"
    texts = [" ".join(p.get("text", "") for p in c["parts"]) for c in context["messages"]]
    assert texts == [
        "one",
        "Reply to 1 items.",
        "two",
        # The streamed deltas joined into one model part.
        "Reply to 3 items. one two three",
    ]
    client.close()


def test_overflow_is_recovered_once(
    gemini_proxy: str, upstream: FakeUpstream, summarizer: OpenAIFake
) -> None:
    summarizer.script(Reply.ok(DEFAULT_SUMMARY))
    upstream.script(context_too_long_gemini())
    history = []
    for i in range(20):
        history += [
            {"role": "user", "parts": [{"text": f"Turn {i}: " + "word " * 40}]},
            {"role": "model", "parts": [{"text": f"ok {i}"}]},
        ]
    history.append({"role": "user", "parts": [{"text": "go on"}]})
    answer = httpx.post(
        f"{gemini_proxy}/v1beta/models/gemini-2.5-flash:generateContent",
        json={"contents": history},
        headers={"x-goog-api-key": KEY},
    )
    assert answer.status_code == 200, answer.text
    first, retry = (r.body["contents"] for r in upstream.received)
    assert first == history
    assert retry[0]["parts"][0]["text"].startswith(SUMMARY_MARKER_PREFIX)
    assert retry[-1] == history[-1]


def test_gemini_events_end_with_a_finish_reason() -> None:
    # The fake's stream is the shape the SDK parses (a guard on the fake itself).
    events = gemini_events(["a", "b"])
    assert events[-1][1]["candidates"][0]["finishReason"] == "STOP"
    assert all("finishReason" not in e[1]["candidates"][0] for e in events[:-1])
