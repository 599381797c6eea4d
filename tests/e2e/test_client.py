"""The Python client against a real uvicorn server on loopback, sync and async."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from context_compactor import (
    TIMEOUT_ERROR,
    TRANSPORT_ERROR,
    UNEXPECTED_RESPONSE,
    AsyncCompactorClient,
    CompactorAPIError,
    CompactorClient,
)

from app.settings import Settings
from tests.conftest import CLAUDE_CODE, load_json
from tests.live_server import live_server

TRANSCRIPT = CLAUDE_CODE / "4d5611e5.agent-a2898e3.openai.json"
KEYS = "t1:key-aaaaaaaa,t2:key-bbbbbbbb"


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("client") / "compactor.db"
    with live_server(Settings(database_url=f"sqlite:///{db}")) as url:
        yield url


@pytest.fixture(scope="module")
def keyed_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("client-keys") / "compactor.db"
    with live_server(Settings(database_url=f"sqlite:///{db}", api_keys=KEYS)) as url:
        yield url


@pytest.fixture(scope="module")
def transcript() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = load_json(TRANSCRIPT)["messages"]
    return messages


def _turns(n: int, size: int = 300) -> list[dict[str, Any]]:
    """n user/assistant exchanges of about `size` words each."""
    messages: list[dict[str, Any]] = []
    for i in range(n):
        messages.append({"role": "user", "content": f"step {i}: please edit src/m{i}.py " * size})
        messages.append({"role": "assistant", "content": f"edited src/m{i}.py, tests ok " * size})
    return messages


SESSION_SETTINGS: dict[str, Any] = {
    "model": "gpt-4o",
    "format": "openai",
    "system": "You are a coding agent.",
    "trigger_tokens": 4_000,
    "keep_recent_tokens": 1_000,
    "metadata": {"agent": "e2e"},
}


# --- sync -------------------------------------------------------------------------------


def test_sync_client_covers_every_endpoint(base_url: str, transcript: list[dict[str, Any]]) -> None:
    with CompactorClient(base_url) as compactor:
        assert compactor.healthz().status == "ok"
        ready = compactor.readyz()
        assert ready.status == "ready" and "o200k_base" in ready.tokenizers

        estimate = compactor.estimate(transcript, model="gpt-4o")
        assert estimate.tokens > 10_000 and estimate.encoding == "o200k_base"
        # Tool call framing is unpublished: the estimate says which parts are a guess.
        assert not estimate.exact and "tool_calls" in estimate.breakdown.estimated
        assert len(estimate.per_message) == len(transcript)
        assert estimate.breakdown.messages > 0 and estimate.raw["tokens"] == estimate.tokens

        compacted = compactor.compact(
            transcript, model="gpt-4o", force=True, keep_recent_tokens=4000
        )
        assert compacted.compacted and compacted.summary
        assert compacted.tokens_after < compacted.tokens_before
        assert compacted.estimate_floor == len(compacted.messages)
        assert compacted.summarizer is not None and compacted.summarizer.provider == "extractive"
        assert compacted.messages[-1] == transcript[-1]  # the kept tail, verbatim

        prompt = compactor.assemble_system_prompt(
            "/home/u/project",
            files=[{"path": "/home/u/project/AGENTS.md", "content": "Run make test."}],
        )
        assert "Run make test." in prompt.system
        assert [s.kind for s in prompt.sources] == ["base", "rules"]

        session = compactor.create_session(**SESSION_SETTINGS)
        assert session.trigger_tokens == 4_000 and session.metadata == {"agent": "e2e"}
        assert session.id in {s.id for s in compactor.list_sessions(limit=500).sessions}
        assert compactor.get_session(session.id).message_count == 0

        appended = compactor.append_messages(session.id, _turns(6), idempotency_key="batch-1")
        assert (appended.appended, appended.first_seq, appended.last_seq) == (12, 0, 11)
        page = compactor.transcript(session.id, offset=2, limit=3)
        assert page.total == 12 and len(page.messages) == 3
        assert page.messages[0] == _turns(6)[2]

        context = compactor.context(session.id)
        assert context.system == "You are a coding agent." and context.format == "openai"
        assert context.estimate.should_compact and len(context.messages) == 12

        prepared = compactor.prepare(session.id)
        assert prepared.compacted and prepared.compaction is not None
        assert prepared.compaction.trigger == "auto"
        assert prepared.context.estimate.tokens < context.estimate.tokens

        compactor.append_messages(session.id, _turns(4))
        manual = compactor.compact_session(session.id, reason="manual", instructions="files")
        assert manual.compacted and manual.compaction is not None
        assert manual.compaction.instructions == "files"

        records = compactor.compactions(session.id)
        assert [r.trigger for r in records] == ["auto", "manual"]
        assert records[1].previous_id == records[0].id

        assert "compactor" in compactor.metrics()

        compactor.delete_session(session.id)
        with pytest.raises(CompactorAPIError) as gone:
            compactor.get_session(session.id)
        assert gone.value.status == 404


def test_idempotency_key_is_sent_and_a_repeat_appends_nothing(base_url: str) -> None:
    sent: list[httpx.Request] = []
    with httpx.Client(event_hooks={"request": [sent.append]}) as http:
        compactor = CompactorClient(base_url, http_client=http)
        session = compactor.create_session(format="openai")
        batch = [{"role": "user", "content": "hello"}]
        first = compactor.append_messages(session.id, batch, idempotency_key="key-1")
        again = compactor.append_messages(session.id, batch, idempotency_key="key-1")
        compactor.close()  # an injected client stays open
        assert not http.is_closed
    assert first == again and first.appended == 1
    assert sent[-1].headers["Idempotency-Key"] == "key-1"
    with CompactorClient(base_url) as compactor:
        assert compactor.transcript(session.id).total == 1
        with pytest.raises(CompactorAPIError) as reused:
            compactor.append_messages(session.id, batch * 2, idempotency_key="key-1")
        assert reused.value.status == 422
        assert reused.value.type.endswith("idempotency-key-reused")


def test_errors_carry_the_problem_details(base_url: str) -> None:
    with CompactorClient(base_url) as compactor:
        with pytest.raises(CompactorAPIError) as missing:
            compactor.context("no-such-session")
        error = missing.value
        assert (error.status, error.title) == (404, "Session not found")
        assert error.type.endswith("session-not-found")
        assert "no-such-session" in error.detail and error.body["status"] == 404
        assert error.method == "GET" and error.url.endswith("/sessions/no-such-session/context")
        assert "404 Session not found" in str(error)

        session = compactor.create_session(format="openai")
        with pytest.raises(CompactorAPIError) as invalid:
            compactor.append_messages(session.id, [{"role": "wizard", "content": "hi"}])
        assert invalid.value.status == 422 and "role" in invalid.value.detail

        with pytest.raises(CompactorAPIError) as schema:
            compactor.estimate([{"role": "user", "content": "hi"}], context_window=-1)
        assert schema.value.status == 422
        assert schema.value.body["errors"][0]["field"] == "context_window"

        compactor.append_messages(session.id, [{"role": "user", "content": "just one"}])
        with pytest.raises(CompactorAPIError) as nothing:
            compactor.compact_session(session.id, reason="overflow")
        assert nothing.value.status == 409 and nothing.value.title == "Nothing to compact"


def test_api_keys_and_tenants(keyed_url: str) -> None:
    with CompactorClient(keyed_url) as anonymous:
        assert anonymous.healthz().status == "ok"  # health needs no key
        with pytest.raises(CompactorAPIError) as no_key:
            anonymous.list_sessions()
        assert no_key.value.status == 401 and no_key.value.type.endswith("unauthorized")
    with CompactorClient(keyed_url, api_key="key-wrong-key") as wrong:
        with pytest.raises(CompactorAPIError) as bad_key:
            wrong.estimate([{"role": "user", "content": "hi"}])
        assert bad_key.value.status == 401 and "not valid" in bad_key.value.detail
    with (
        CompactorClient(keyed_url, api_key="key-aaaaaaaa") as t1,
        CompactorClient(keyed_url, api_key="key-bbbbbbbb") as t2,
    ):
        mine = t1.create_session()
        assert t1.get_session(mine.id).id == mine.id
        with pytest.raises(CompactorAPIError) as other_tenant:
            t2.get_session(mine.id)
        assert other_tenant.value.status == 404
        assert mine.id not in {s.id for s in t2.list_sessions().sessions}


# --- async ------------------------------------------------------------------------------


async def _async_flow(base_url: str, transcript: list[dict[str, Any]]) -> None:
    async with AsyncCompactorClient(base_url) as compactor:
        assert (await compactor.healthz()).status == "ok"
        assert (await compactor.readyz()).database == "ok"
        assert "compactor" in await compactor.metrics()
        estimate = await compactor.estimate(transcript, model="gpt-4o")
        assert len(estimate.per_message) == len(transcript)
        compacted = await compactor.compact(transcript, force=True, keep_recent_tokens=4000)
        assert compacted.compacted and compacted.cut_index is not None
        prompt = await compactor.assemble_system_prompt("/srv/app", files=[])
        assert prompt.tokens > 0

        session = await compactor.create_session(**SESSION_SETTINGS)
        assert (await compactor.get_session(session.id)).model == "gpt-4o"
        assert (await compactor.list_sessions(limit=500)).total >= 1
        batch = _turns(6)
        first = await compactor.append_messages(session.id, batch, idempotency_key="a-1")
        assert first == await compactor.append_messages(session.id, batch, idempotency_key="a-1")
        assert (await compactor.transcript(session.id, limit=5)).total == 12
        assert (await compactor.context(session.id)).estimate.should_compact
        prepared = await compactor.prepare(session.id)
        assert prepared.compacted
        # Concurrent reads share one connection pool.
        contexts = await asyncio.gather(*(compactor.context(session.id) for _ in range(5)))
        assert {len(c.messages) for c in contexts} == {len(prepared.context.messages)}
        await compactor.append_messages(session.id, _turns(4))
        overflow = await compactor.compact_session(session.id, reason="overflow")
        assert overflow.compaction is not None and overflow.compaction.trigger == "overflow"
        assert len(await compactor.compactions(session.id)) == 2
        await compactor.delete_session(session.id)
        with pytest.raises(CompactorAPIError) as gone:
            await compactor.prepare(session.id)
        assert gone.value.status == 404


def test_async_client_covers_every_endpoint(
    base_url: str, transcript: list[dict[str, Any]]
) -> None:
    asyncio.run(_async_flow(base_url, transcript))


async def _async_errors(keyed_url: str) -> None:
    async with AsyncCompactorClient(keyed_url, api_key="key-wrong-key") as wrong:
        with pytest.raises(CompactorAPIError) as bad_key:
            await wrong.create_session()
        assert bad_key.value.status == 401
    async with AsyncCompactorClient(keyed_url, api_key="key-aaaaaaaa") as t1:
        session = await t1.create_session(format="openai")
        with pytest.raises(CompactorAPIError) as invalid:
            await t1.append_messages(session.id, [{"role": "tool", "content": "x"}])
        assert invalid.value.status == 422
        await t1.append_messages(session.id, [{"role": "user", "content": "hi"}])
        with pytest.raises(CompactorAPIError) as nothing:
            await t1.compact_session(session.id)
        assert nothing.value.status == 409


def test_async_client_maps_errors(keyed_url: str) -> None:
    asyncio.run(_async_errors(keyed_url))


# --- no answer, or not the answer the contract promises -----------------------------------


def test_connection_refused_is_status_zero(tmp_path: Path) -> None:
    with live_server(Settings(database_url=f"sqlite:///{tmp_path / 'gone.db'}")) as url:
        pass  # the port is free again once the server stopped
    with CompactorClient(url, timeout=5) as compactor, pytest.raises(CompactorAPIError) as err:
        compactor.healthz()
    assert err.value.status == 0 and err.value.type == TRANSPORT_ERROR
    assert isinstance(err.value.__cause__, httpx.ConnectError)


@contextmanager
def _mocked(handler: Any) -> Iterator[CompactorClient]:
    """A client whose every request is answered by `handler` (no network at all)."""
    with httpx.Client(transport=httpx.MockTransport(handler)) as http:
        yield CompactorClient("http://compactor.invalid", http_client=http)


def test_timeout_and_non_json_and_malformed_answers() -> None:
    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("read timed out", request=request)

    with _mocked(timeout) as compactor, pytest.raises(CompactorAPIError) as slow:
        compactor.prepare("s1")
    assert (slow.value.status, slow.value.type) == (0, TIMEOUT_ERROR)

    def proxy_page(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html><body>Bad gateway from nginx</body></html>")

    with _mocked(proxy_page) as compactor, pytest.raises(CompactorAPIError) as proxy:
        compactor.estimate([{"role": "user", "content": "hi"}])
    assert (proxy.value.status, proxy.value.title, proxy.value.body) == (502, "Bad Gateway", {})
    assert "Bad gateway from nginx" in proxy.value.detail

    def wrong_shape(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"appended": "three"})

    with _mocked(wrong_shape) as compactor, pytest.raises(CompactorAPIError) as malformed:
        compactor.append_messages("s1", [])
    assert (malformed.value.status, malformed.value.type) == (200, UNEXPECTED_RESPONSE)
    assert "appended" in malformed.value.detail


def test_the_client_imports_neither_the_web_framework_nor_the_database() -> None:
    code = (
        "import sys, context_compactor\n"
        "heavy = {'app', 'fastapi', 'starlette', 'sqlalchemy', 'pydantic', 'uvicorn',"
        " 'tiktoken'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
