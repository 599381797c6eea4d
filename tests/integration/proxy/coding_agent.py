"""A coding agent as the cache tests replay it (SPEC §15): each turn the model calls a tool,
the agent answers with the tool's result and resends its whole history, with Claude
Code's `cache_control` placement (both system blocks and the last message marked, rebuilt
every turn). The billing fake is the upstream; `ToolCalls` is its model, calling one
`Read` per turn."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.billing import Received, Reply, ToolUse

MARK: dict[str, Any] = {"type": "ephemeral"}
ANTHROPIC_HEADERS = {"x-api-key": "sk-ant-caller", "anthropic-version": "2023-06-01"}
SYSTEM = [
    {"type": "text", "text": "You are a coding agent."},
    {"type": "text", "text": "Read before you edit. " + " ".join(f"rule{i}" for i in range(600))},
]
TOOLS = [
    {
        "name": "Read",
        "description": "Reads a file.",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
    }
]


def file_text(turn: int, tokens: int) -> str:
    """A tool result of about `tokens` tokens, different every turn."""
    return f"# src/module_{turn}.py\n" + "\n".join(
        f"def f{turn}_{j}(x):  # line {j}" for j in range(tokens // 9)
    )


class ToolCalls:
    """The fake model: one `Read` call per turn, a new file each time."""

    def __init__(self) -> None:
        self.turns = itertools.count()

    def __call__(self, received: Received) -> Reply:
        turn = next(self.turns)
        call = ToolUse(f"toolu_{turn:04d}", "Read", {"file_path": f"src/module_{turn}.py"})
        return Reply(f"Reading module {turn}.", (call,))


@dataclass
class CodingAgent:
    """Replays turns against `url` (the service or the fake itself)."""

    url: str
    model: str
    headers: dict[str, str] = field(default_factory=dict)
    result_tokens: int = 400
    # Extra top-level fields on every request (context_management, stream, …).
    extra: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(
        default_factory=lambda: [{"role": "user", "content": "Read every module in src/."}]
    )
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=60))

    def body(self) -> dict[str, Any]:
        """Claude Code's request: marked system blocks, the last message marked."""
        messages = copy.deepcopy(self.history)
        last = messages[-1]
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"]}]
        last["content"][-1]["cache_control"] = MARK
        return {
            "model": self.model,
            "max_tokens": 1024,
            "system": [{**block, "cache_control": MARK} for block in SYSTEM],
            "tools": TOOLS,
            "messages": messages,
            **self.extra,
        }

    def turn(self) -> httpx.Response:
        """One request; the reply and the tool's result join the history."""
        headers = {**ANTHROPIC_HEADERS, **self.headers}
        answer = self.http.post(f"{self.url}/v1/messages", json=self.body(), headers=headers)
        assert answer.status_code == 200, answer.text
        content = self.reply_content(answer)
        self.history.append({"role": "assistant", "content": content})
        calls = [b for b in content if b.get("type") == "tool_use"]
        results = [
            {
                "type": "tool_result",
                "tool_use_id": call["id"],
                "content": file_text(len(self.history), self.result_tokens),
            }
            for call in calls
        ]
        self.history.append({"role": "user", "content": results or "Go on."})
        return answer

    def reply_content(self, answer: httpx.Response) -> list[dict[str, Any]]:
        if self.extra.get("stream"):
            return _streamed_content(answer.text)
        content: list[dict[str, Any]] = answer.json()["content"]
        return content

    def turns(self, count: int) -> Iterator[httpx.Response]:
        for _ in range(count):
            yield self.turn()


def _streamed_content(text: str) -> list[dict[str, Any]]:
    """The content blocks of a streamed Messages answer (what the SDK accumulates)."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for line in text.splitlines():
        if not line.startswith("data: "):
            continue
        event = json.loads(line[6:])
        kind, index = event.get("type"), event.get("index", 0)
        if kind == "content_block_start":
            blocks[index] = dict(event["content_block"])
        elif kind == "content_block_delta":
            delta = event["delta"]
            if delta.get("type") == "text_delta":
                blocks[index]["text"] = blocks[index].get("text", "") + delta["text"]
            elif delta.get("type") == "input_json_delta":
                partial[index] = partial.get(index, "") + delta["partial_json"]
            elif delta.get("type") == "compaction_delta":
                blocks[index]["content"] = (blocks[index].get("content") or "") + (
                    delta.get("content") or ""
                )
        elif kind == "content_block_stop" and index in partial:
            blocks[index]["input"] = json.loads(partial.pop(index) or "{}")
    return [blocks[i] for i in sorted(blocks)]
