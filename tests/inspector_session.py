"""A session built from a real Claude Code transcript, for the inspector tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tests.conftest import AUTOCOMPACTED_ANTHROPIC, load_json

BATCH = 40
SETTINGS = {"trigger_tokens": 30_000, "keep_recent_tokens": 8_000}
# Markup in a transcript must reach a reader as text.
HOSTILE_TEXT = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


class HttpClient(Protocol):
    def post(self, url: str, **kwargs: Any) -> Any: ...
    def get(self, url: str, **kwargs: Any) -> Any: ...


@dataclass(frozen=True)
class BuiltSession:
    id: str
    messages: list[Any]
    compactions: list[dict[str, Any]]


def build_compacted_session(
    client: HttpClient, path: Path = AUTOCOMPACTED_ANTHROPIC, **settings: Any
) -> BuiltSession:
    """A real transcript (298 entries by default) appended in batches, `prepare` after each."""
    body = load_json(path)
    messages: list[Any] = body["messages"]
    created = client.post("/sessions", json={"model": body["model"], **SETTINGS, **settings})
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    for start in range(0, len(messages), BATCH):
        appended = client.post(
            f"/sessions/{sid}/messages", json={"messages": messages[start : start + BATCH]}
        )
        assert appended.status_code == 200, appended.text
        assert client.post(f"/sessions/{sid}/prepare").status_code == 200
    compactions = client.get(f"/sessions/{sid}/compactions").json()["compactions"]
    assert len(compactions) >= 3
    return BuiltSession(sid, messages, compactions)


def build_hostile_session(client: HttpClient) -> str:
    """A small session whose user text, tool result and summary all carry markup."""
    sid = client.post("/sessions", json={"trigger_tokens": 600, "keep_recent_tokens": 100}).json()[
        "id"
    ]
    filler = "please look at the parser module again " * 30
    messages: list[Any] = []
    for i in range(4):
        messages.append({"role": "user", "content": f"{HOSTILE_TEXT} step {i}: {filler}"})
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{i}", "name": "Read", "input": {"p": i}}
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": HOSTILE_TEXT}
                ],
            }
        )
        messages.append({"role": "assistant", "content": f"done {i} {HOSTILE_TEXT}"})
    assert client.post(f"/sessions/{sid}/messages", json={"messages": messages}).status_code == 200
    prepared = client.post(f"/sessions/{sid}/prepare").json()
    assert prepared["compacted"], prepared
    return sid
