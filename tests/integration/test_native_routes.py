"""The vendors' counting and standalone-compaction routes driven by the official SDKs
against a real server: answered by the service, no upstream involved."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from app.settings import Settings
from tests.conftest import CLAUDE_CODE, load_json
from tests.integration.fake_providers import OpenAIFake
from tests.integration.live_server import live_service

AGENT = CLAUDE_CODE / "4d5611e5.agent-a2898e3.anthropic.json"
RESPONSES = CLAUDE_CODE / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.responses.json"
KEYS = "t1:key-aaaaaaaa,t2:key-bbbbbbbb"


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The service, summarizing with a fake OpenAI-compatible model on loopback."""
    db = tmp_path_factory.mktemp("native") / "c.db"
    with OpenAIFake() as summarizer:
        settings = Settings(
            database_url=f"sqlite:///{db}",
            api_keys=KEYS,
            summarizer="openai",
            summarizer_base_url=f"{summarizer.base_url}/v1",
            summarizer_model="gpt-4o-mini",
            summarizer_api_key="sk-summarizer",
        )
        with live_service(settings) as url:
            yield url


_OPEN: list[anthropic.Anthropic | openai.OpenAI] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def claude(base_url: str, key: str = "key-aaaaaaaa") -> anthropic.Anthropic:
    """The official Anthropic SDK pointed at the service (closed after the test)."""
    client = anthropic.Anthropic(
        base_url=base_url,
        api_key="sk-ant-caller",
        max_retries=0,
        default_headers={"X-Compactor-Key": key},
    )
    _OPEN.append(client)
    return client


def gpt(base_url: str, key: str = "key-aaaaaaaa") -> openai.OpenAI:
    """The official OpenAI SDK pointed at the service (closed after the test)."""
    client = openai.OpenAI(
        base_url=f"{base_url}/v1",
        api_key="sk-caller",
        max_retries=0,
        default_headers={"X-Compactor-Key": key},
    )
    _OPEN.append(client)
    return client


def estimate(base_url: str, body: dict[str, Any]) -> int:
    answer = httpx.post(
        f"{base_url}/estimate", json=body, headers={"Authorization": "Bearer key-aaaaaaaa"}
    )
    assert answer.status_code == 200, answer.text
    tokens: int = answer.json()["tokens"]
    return tokens


def test_count_tokens_is_the_services_own_estimate(base_url: str) -> None:
    transcript = load_json(AGENT)
    counted = claude(base_url).messages.count_tokens(
        model=transcript["model"], messages=transcript["messages"]
    )
    assert counted.input_tokens == estimate(
        base_url, {"messages": transcript["messages"], "model": transcript["model"]}
    )
    assert counted.input_tokens > 50_000


def test_beta_count_tokens_applies_the_edits_and_reports_the_original(base_url: str) -> None:
    transcript = load_json(AGENT)
    client = claude(base_url)
    plain = client.messages.count_tokens(model=transcript["model"], messages=transcript["messages"])
    counted = client.beta.messages.count_tokens(
        model=transcript["model"],
        messages=transcript["messages"],
        context_management={
            "edits": [
                {
                    "type": "clear_tool_uses_20250919",
                    "trigger": {"type": "input_tokens", "value": 20_000},
                    "keep": {"type": "tool_uses", "value": 3},
                },
                # Counting never calls the summarizer: compaction is left to the request.
                {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 1}},
            ]
        },
        betas=["context-management-2025-06-27", "compact-2026-01-12"],
    )
    assert counted.context_management is not None
    assert counted.context_management.original_input_tokens == plain.input_tokens
    assert counted.input_tokens < plain.input_tokens // 2


def test_unknown_edit_type_is_a_clear_400(base_url: str) -> None:
    with pytest.raises(anthropic.BadRequestError) as raised:
        claude(base_url).beta.messages.count_tokens(
            model="claude-sonnet-4-5",
            messages=[{"role": "user", "content": "hi"}],
            context_management={"edits": [{"type": "clear_everything_20990101"}]},  # type: ignore[list-item]
        )
    body = raised.value.body
    assert isinstance(body, dict) and "clear_everything_20990101" in body["detail"]
    assert "compact_20260112" in body["detail"]


def test_proxy_routes_take_the_service_key_in_x_compactor_key(base_url: str) -> None:
    with pytest.raises(anthropic.AuthenticationError):
        claude(base_url, key="wrong-key-000").messages.count_tokens(
            model="claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}]
        )


def test_responses_input_tokens_and_compact_round_trip(base_url: str) -> None:
    transcript = load_json(RESPONSES)
    client = gpt(base_url)
    counted = client.responses.input_tokens.count(
        model=transcript["model"], input=transcript["input"]
    )
    assert counted.object == "response.input_tokens" and counted.input_tokens > 60_000

    compacted = client.responses.compact(model=transcript["model"], input=transcript["input"])
    assert compacted.object == "response.compaction"
    item = compacted.output[-1]
    assert item.type == "compaction" and item.encrypted_content.startswith("ccs1.")
    assert all(o.type == "message" for o in compacted.output[:-1])
    # The summarizer's usage (the fake answers 1200 in, 300 out per call).
    assert compacted.usage.output_tokens >= 300 and compacted.usage.input_tokens >= 1200
    assert compacted.usage.total_tokens == (
        compacted.usage.input_tokens + compacted.usage.output_tokens
    )

    # The next turn: the compacted window as input, then the new message (vendor docs).
    # The SDK types output messages as assistant messages; the user messages of a compacted
    # window carry input parts, so they are serialized without its type warnings.
    window = [o.to_dict(warnings=False) for o in compacted.output]
    next_input = [*window, {"role": "user", "content": "Now run the tests."}]
    after = client.responses.input_tokens.count(model=transcript["model"], input=next_input)
    assert after.input_tokens < counted.input_tokens // 2

    tampered = copy.deepcopy(next_input)
    tampered[-2]["encrypted_content"] = item.encrypted_content[:-4] + "AAAA"
    with pytest.raises(openai.BadRequestError, match="signature"):
        client.responses.input_tokens.count(model=transcript["model"], input=tampered)
    with pytest.raises(openai.BadRequestError, match="another tenant"):
        gpt(base_url, key="key-bbbbbbbb").responses.input_tokens.count(
            model=transcript["model"], input=next_input
        )


def test_a_short_window_compacts_to_an_item_that_keeps_it(base_url: str) -> None:
    client = gpt(base_url)
    short = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    compacted = client.responses.compact(model="gpt-4o", input=short)  # type: ignore[arg-type]
    assert [o.type for o in compacted.output] == ["message", "compaction"]
    again = client.responses.input_tokens.count(
        model="gpt-4o", input=[o.to_dict(warnings=False) for o in compacted.output]
    )
    plain = client.responses.input_tokens.count(model="gpt-4o", input=short)  # type: ignore[arg-type]
    assert again.input_tokens == plain.input_tokens


def test_server_side_history_is_refused_unless_bound_to_a_session(base_url: str) -> None:
    client = gpt(base_url)
    with pytest.raises(openai.BadRequestError, match="X-Compactor-Session"):
        client.responses.input_tokens.count(
            model="gpt-4o", input="hi", previous_response_id="resp_123"
        )
    with pytest.raises(openai.BadRequestError, match="conversation"):
        client.responses.input_tokens.count(model="gpt-4o", input="hi", conversation="conv_1")
    with pytest.raises(openai.BadRequestError, match="previous_response_id"):
        client.responses.compact(model="gpt-4o", input="hi", previous_response_id="resp_1")
    # Bound to a session, the session stands for the server-side history: its context is
    # counted (and compacted) in front of the request's new items.
    auth = {"Authorization": "Bearer key-aaaaaaaa"}
    session = httpx.post(
        f"{base_url}/sessions", json={"model": "gpt-4o", "format": "responses"}, headers=auth
    ).json()["id"]
    earlier = [
        {"role": "user", "content": "What is in the repo? " * 50},
        {"type": "message", "role": "assistant", "content": "Files. " * 50},
    ]
    appended = httpx.post(
        f"{base_url}/sessions/{session}/messages", json={"messages": earlier}, headers=auth
    )
    assert appended.status_code in (200, 201), appended.text
    bind = {"X-Compactor-Session": session}
    bound = client.responses.input_tokens.count(
        model="gpt-4o", input="hi", previous_response_id="resp_123", extra_headers=bind
    )
    alone = client.responses.input_tokens.count(model="gpt-4o", input="hi")
    together = client.responses.input_tokens.count(
        model="gpt-4o",
        input=[*earlier, {"role": "user", "content": "hi"}],  # type: ignore[list-item]
    )
    assert bound.input_tokens == together.input_tokens > alone.input_tokens
    compacted = client.responses.compact(
        model="gpt-4o", input="hi", previous_response_id="resp_123", extra_headers=bind
    )
    assert compacted.output[-1].type == "compaction"
    with pytest.raises(openai.NotFoundError):
        client.responses.input_tokens.count(
            model="gpt-4o", input="hi", extra_headers={"X-Compactor-Session": "nope"}
        )


def test_anthropic_counting_bound_to_a_session_counts_its_context(base_url: str) -> None:
    # Found by review: count_tokens ignored X-Compactor-Session (the Responses routes did not).
    client = claude(base_url)
    auth = {"Authorization": "Bearer key-aaaaaaaa"}
    session = httpx.post(
        f"{base_url}/sessions",
        json={"model": "claude-sonnet-4-5", "format": "anthropic", "system": "Be brief."},
        headers=auth,
    ).json()["id"]
    earlier = [
        {"role": "user", "content": "What is in the repo? " * 50},
        {"role": "assistant", "content": "Files. " * 50},
    ]
    appended = httpx.post(
        f"{base_url}/sessions/{session}/messages", json={"messages": earlier}, headers=auth
    )
    assert appended.status_code == 200, appended.text
    question = [{"role": "user", "content": "hi"}]
    bound = client.messages.count_tokens(
        model="claude-sonnet-4-5",
        messages=question,  # type: ignore[arg-type]
        extra_headers={"X-Compactor-Session": session},
    )
    together = client.messages.count_tokens(
        model="claude-sonnet-4-5",
        system="Be brief.",
        messages=[*earlier, *question],  # type: ignore[list-item]
    )
    assert bound.input_tokens == together.input_tokens
    with pytest.raises(anthropic.NotFoundError):
        client.messages.count_tokens(
            model="claude-sonnet-4-5",
            messages=question,  # type: ignore[arg-type]
            extra_headers={"X-Compactor-Session": "nope"},
        )


def test_openapi_lists_the_native_routes(base_url: str, tmp_path: Path) -> None:
    # Building the OpenAPI document is the slowest first answer: allow a loaded machine.
    paths = httpx.get(f"{base_url}/openapi.json", timeout=60).json()["paths"]
    for path in (
        "/v1/messages/count_tokens",
        "/v1/responses/compact",
        "/v1/responses/input_tokens",
    ):
        assert path in paths


HI = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("path", "body", "status", "says"),
    [
        ("/v1/messages/count_tokens", {"messages": 5}, 422, "messages"),
        ("/v1/messages/count_tokens", {"messages": HI, "model": 5}, 422, "model"),
        ("/v1/messages/count_tokens", {"messages": HI, "tools": "x"}, 422, "tools"),
        (
            "/v1/messages/count_tokens",
            {"messages": [{"role": "user", "content": [{"type": "compaction", "content": 5}]}]},
            400,
            "compaction block",
        ),
        (
            "/v1/messages/count_tokens",
            {"messages": HI, "context_management": {"edits": [{"type": "x", "keep": 1}]}},
            400,
            "unknown context management edit",
        ),
        ("/v1/responses/input_tokens", {"input": 5}, 422, "input"),
        ("/v1/responses/input_tokens", {"input": "hi", "model": ["x"]}, 422, "model"),
        ("/v1/responses/compact", {"input": [{"type": "compaction"}]}, 400, "compaction"),
    ],
)
def test_bad_bodies_are_4xx_problems_that_say_what_to_fix(
    base_url: str, path: str, body: dict[str, Any], status: int, says: str
) -> None:
    answer = httpx.post(f"{base_url}{path}", json=body, headers={"X-Compactor-Key": "key-aaaaaaaa"})
    assert answer.status_code == status, answer.text
    problem = answer.json()
    assert answer.headers["content-type"] == "application/problem+json"
    assert says in problem["detail"] and problem["error"]["message"] == problem["detail"]
