"""`prepare` builds the context a compaction leaves from the compaction itself (it does
not read and count the session again): what it answers is exactly what GET /context
answers afterwards, for every strategy, with a system prefix and usage reports, on
SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.conftest import BIG_OPENAI, load_json

SYSTEM = {"role": "system", "content": "You are a coding agent. Keep the public interface."}


def _usage(
    client: TestClient, model: str, context: list[dict[str, Any]], batch: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A usage report on the batch's last assistant message, as the provider would have
    returned it: the prompt was the context and the batch before that message."""
    for index in range(len(batch) - 1, -1, -1):
        if batch[index]["role"] == "assistant":
            prompt = [*context, *batch[:index]]
            estimate = client.post("/estimate", json={"model": model, "messages": prompt})
            prompt_tokens = estimate.json()["tokens"] + 7
            return [
                {
                    "message_index": index,
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": 50,
                    "total_tokens": prompt_tokens + 50,
                }
            ]
    return []


@pytest.mark.parametrize("strategy", ["summarize", "clear_tool_results", "auto"])
def test_a_compacting_prepare_answers_the_context_the_session_now_has(
    database_url: str, tokenizers: Any, strategy: str
) -> None:
    body = load_json(BIG_OPENAI)
    messages = [SYSTEM, *body["messages"]]
    settings = {
        "model": body["model"],
        "trigger_tokens": 30_000,
        "keep_recent_tokens": 8_000,
        "strategy": strategy,
        "clear": {"keep": 2},
    }
    app = create_app(Settings(database_url=database_url), tokenizers=tokenizers)
    with TestClient(app) as client:
        sid = client.post("/sessions", json=settings).json()["id"]
        compacted, context = 0, []
        for start in range(0, len(messages), 60):
            batch = messages[start : start + 60]
            usage = _usage(client, body["model"], context, batch)
            appended = client.post(
                f"/sessions/{sid}/messages", json={"messages": batch, "usage": usage}
            )
            assert appended.status_code == 200, appended.text
            prepared = client.post(f"/sessions/{sid}/prepare")
            assert prepared.status_code == 200, prepared.text
            answer = prepared.json()
            fresh = client.get(f"/sessions/{sid}/context").json()
            assert answer["context"] == fresh
            compacted += answer["compacted"]
            context = fresh["messages"]
            if answer["compacted"]:
                record = answer["compaction"]
                assert record["tokens_after"] == fresh["estimate"]["tokens"]
                assert fresh["messages"][0] == SYSTEM
        assert compacted >= 2
