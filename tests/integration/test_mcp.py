"""Recall over MCP (SPEC §17): the service under a real uvicorn server, driven by the
official `mcp` SDK's own client over streamable HTTP, and by a multi-turn agent whose
model (a fake OpenAI-compatible server) recalls a fact compaction folded away by calling
`search_history`."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import httpx
import httpx2
import openai
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from app.engine.compaction.marker import RECALL_LINE_PREFIX
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry
from tests.conftest import migrated_copy
from tests.integration.loopback_server import LoopbackServer
from tests.live_server import live_server

ALPHA_KEY = "alpha-key-0123456789"
BETA_KEY = "beta-key-0123456789"
ALPHA = {"Authorization": f"Bearer {ALPHA_KEY}"}
BETA = {"Authorization": f"Bearer {BETA_KEY}"}
# Said once, by the assistant, mid-session: the extractive summary drops it.
PLANTED = {
    "role": "assistant",
    "content": "Noted, the staging database password this week is TANGERINE-4417.",
}
PLANTED_SEQ = 11


def _filler(n: int) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"routine step {i}: we refactor the parser module and rerun the tests. " * 4,
        }
        for i in range(n)
    ]


@pytest.fixture
def service(tmp_path: Path, migrated_sqlite: Path, tokenizers: TokenizerRegistry) -> Iterator[str]:
    settings = Settings(
        database_url=migrated_copy(migrated_sqlite, tmp_path),
        api_keys=f"alpha:{ALPHA_KEY},beta:{BETA_KEY}",
    )
    with live_server(settings, tokenizers=tokenizers) as url:
        yield url


def _folded_session(url: str) -> str:
    """A session whose entry PLANTED_SEQ (the planted fact) compaction folded away."""
    body = {"trigger_tokens": 1500, "keep_recent_tokens": 300}
    sid: str = httpx.post(f"{url}/sessions", json=body, headers=ALPHA).json()["id"]
    filler = _filler(60)
    messages = [*filler[:PLANTED_SEQ], PLANTED, *filler[PLANTED_SEQ:]]
    httpx.post(f"{url}/sessions/{sid}/messages", json={"messages": messages}, headers=ALPHA)
    prepared = httpx.post(f"{url}/sessions/{sid}/prepare", headers=ALPHA, timeout=60).json()
    assert prepared["compacted"] is True
    return sid


@asynccontextmanager
async def _client(url: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, sending the API key."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        yield client


def test_the_sdk_client_lists_and_calls_the_four_tools(service: str) -> None:
    sid = _folded_session(service)

    async def run() -> None:
        async with _client(service, ALPHA) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"search_history", "read_entries", "context_status", "compact"}
            found = await client.call_tool(
                "search_history", {"session_id": sid, "query": "staging password", "limit": 5}
            )
            assert not found.is_error
            hits = found.structured_content["hits"]  # type: ignore[index]
            assert hits[0]["seq"] == PLANTED_SEQ and hits[0]["folded"] is True
            assert "TANGERINE-4417" in hits[0]["snippet"]
            read = await client.call_tool(
                "read_entries", {"session_id": sid, "from_seq": 0, "to_seq": 500}
            )
            entries = read.structured_content
            assert entries is not None and entries["truncated"] is True
            assert len(entries["entries"]) == 50 and entries["to_seq"] == 49
            assert entries["entries"][PLANTED_SEQ]["message"] == PLANTED
            status = await client.call_tool("context_status", {"session_id": sid})
            s = status.structured_content
            assert s is not None and s["compactions"] == 1 and s["entries"] == 61
            assert s["threshold"] == 1500 and s["tokens"] > 0
            more = {"messages": _filler(12)}
            httpx.post(f"{service}/sessions/{sid}/messages", json=more, headers=ALPHA)
            compacted = await client.call_tool(
                "compact", {"session_id": sid, "instructions": "keep the step numbers"}
            )
            c = compacted.structured_content
            assert c is not None, compacted.content and c["compacted"] is True
            assert c["compaction"]["instructions"] == "keep the step numbers"
            missing = await client.call_tool("search_history", {"session_id": "nope", "query": "x"})
            assert missing.is_error and "not found" in str(missing.content)
            bad = await client.call_tool("search_history", {"session_id": sid, "query": '"open'})
            assert bad.is_error

        # Another tenant's key does not reach alpha's session.
        async with _client(service, BETA) as client:
            other = await client.call_tool(
                "search_history", {"session_id": sid, "query": "staging"}
            )
            assert other.is_error and "not found" in str(other.content)

    asyncio.run(run())
    records = httpx.get(f"{service}/sessions/{sid}/compactions", headers=ALPHA).json()
    assert [r["trigger"] for r in records["compactions"]] == ["auto", "manual"]


def test_mcp_needs_the_api_key(service: str) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong-key-000000"}):
        answer = httpx.post(
            f"{service}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={**headers, "Accept": "application/json, text/event-stream"},
        )
        assert answer.status_code == 401
        assert answer.headers["content-type"].startswith("application/problem+json")


def test_the_summary_says_the_history_is_searchable_only_with_mcp_on(
    tmp_path: Path, migrated_sqlite: Path, tokenizers: TokenizerRegistry
) -> None:
    for mcp, folder in ((True, "on"), (False, "off")):
        (tmp_path / folder).mkdir()
        settings = Settings(database_url=migrated_copy(migrated_sqlite, tmp_path / folder), mcp=mcp)
        with live_server(settings, tokenizers=tokenizers) as url:
            sid = httpx.post(
                f"{url}/sessions", json={"trigger_tokens": 1500, "keep_recent_tokens": 300}
            ).json()["id"]
            httpx.post(f"{url}/sessions/{sid}/messages", json={"messages": _filler(40)})
            context = httpx.post(f"{url}/sessions/{sid}/prepare", timeout=60).json()["context"]
            summary = context["messages"][0]["content"]
            lines = [line for line in summary.splitlines() if RECALL_LINE_PREFIX in line]
            reached = httpx.post(
                f"{url}/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"Accept": "application/json, text/event-stream"},
            )
            if mcp:
                assert len(lines) == 1 and sid in lines[0] and summary.endswith(lines[0])
                assert reached.status_code != 404
            else:
                assert lines == []
                assert reached.status_code == 404
            # A second compaction starts from the summary, not from the recall line.
            httpx.post(f"{url}/sessions/{sid}/messages", json={"messages": _filler(20)})
            again = httpx.post(f"{url}/sessions/{sid}/compact", json={}, timeout=60).json()
            assert RECALL_LINE_PREFIX not in again["compaction"]["summary"]


# --- A multi-turn agent whose model recalls a folded fact through search_history -------


class _AgentModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat model with one skill: asked about something its context
    does not hold, it reads the session id from the recall line of the summary and calls
    `search_history`; given the tool's answer, it answers from the best folded hit."""

    seen: ClassVar[list[list[dict[str, Any]]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        messages = body["messages"]
        type(self).seen.append(messages)
        last = messages[-1]
        if last["role"] == "tool":
            # What the context lost is a folded hit (the question itself is a kept one).
            hits = [h for h in json.loads(last["content"])["hits"] if h["folded"]]
            snippet = hits[0]["snippet"].replace("**", "") if hits else "I could not find it."
            message: dict[str, Any] = {"role": "assistant", "content": f"From history: {snippet}"}
        else:
            question = str(last["content"])
            text = "\n".join(str(m.get("content")) for m in messages)
            if "password" in question and "TANGERINE" not in text:
                session = re.search(r'session_id "([^"]+)"', text)
                assert session, "the summary should name the session to search"
                arguments = {"session_id": session.group(1), "query": "staging password"}
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{len(type(self).seen)}",
                            "type": "function",
                            "function": {
                                "name": "search_history",
                                "arguments": json.dumps(arguments),
                            },
                        }
                    ],
                }
            else:
                message = {"role": "assistant", "content": "Continuing with the refactor."}
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_an_agent_recalls_a_folded_fact_by_calling_search_history(service: str) -> None:
    sid = _folded_session(service)
    _AgentModel.seen = []
    with LoopbackServer(_AgentModel) as model_server:
        model = openai.OpenAI(base_url=f"{model_server.base_url}/v1", api_key="test")

        async def agent() -> str:
            async with _client(service, ALPHA) as mcp_client:
                tools = [
                    {
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description or "",
                            "parameters": t.input_schema,
                        },
                    }
                    for t in (await mcp_client.list_tools()).tools
                ]
                answer = ""
                for question in ("What next?", "What is the staging database password?"):
                    httpx.post(
                        f"{service}/sessions/{sid}/messages",
                        json={"messages": [{"role": "user", "content": question}]},
                        headers=ALPHA,
                    )
                    for _turn in range(4):
                        context = httpx.post(
                            f"{service}/sessions/{sid}/prepare", headers=ALPHA, timeout=60
                        ).json()["context"]
                        reply = model.chat.completions.create(
                            model="fake-agent", messages=context["messages"], tools=tools
                        )
                        message = reply.choices[0].message.model_dump(exclude_none=True)
                        turn = [message]
                        for call in reply.choices[0].message.tool_calls or []:
                            result = await mcp_client.call_tool(
                                call.function.name, json.loads(call.function.arguments)
                            )
                            text = result.content[0].text  # type: ignore[union-attr]
                            turn.append({"role": "tool", "tool_call_id": call.id, "content": text})
                        httpx.post(
                            f"{service}/sessions/{sid}/messages",
                            json={"messages": turn},
                            headers=ALPHA,
                        )
                        if len(turn) == 1:
                            answer = str(message["content"])
                            break
                return answer

        answer = asyncio.run(agent())
    assert "TANGERINE-4417" in answer
    # The model never had the fact in its context before it searched for it.
    asked = [m for m in _AgentModel.seen if m[-1]["role"] == "user" and "password" in str(m[-1])]
    assert asked and all("TANGERINE" not in json.dumps(m) for m in asked)
    assert any(m[-1]["role"] == "tool" for m in _AgentModel.seen)
