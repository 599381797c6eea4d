"""The agents `bench/cost.py` replays: real transcripts turned into the requests an agent
sends turn by turn (each turn resends the whole history so far), and the replies the
billing fake gives back (the transcript's own next assistant message).

Anthropic agent — Claude Code's `cache_control` placement, as captured from Claude Code
2.x requests: both system text blocks marked (the identity line and the main prompt), no
marker in `tools`, and the last content block of the last message marked; rebuilt every
turn, so older messages never keep a marker (3 breakpoints per request, under the limit
of 4). TTL 5 minutes (the API default; subscription builds use 1 hour).

OpenAI agent — Chat Completions with a `prompt_cache_key` per session and no markers
(OpenAI caches prefixes on its own).

The transcripts carry no system prompt or tool definitions (the Claude Code ones) or a
system message and tools (OpenHands): what is missing is supplied the same way for every
mode — `SYSTEM_PROMPT` below and tool definitions derived from the tool calls the
transcript makes (names and argument keys), so the fixed prefix is the same size in
every mode and the ratios compare context management alone.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.billing import Reply, ToolUse

ROOT = Path(__file__).resolve().parents[1]
DATA = [ROOT / "tests" / "data", ROOT.parent / "shared" / "transcripts"]
EPHEMERAL: dict[str, Any] = {"type": "ephemeral"}
# The agent's model, dated so a models file can give it a window of its own without
# changing the undated entry a summarizer of the same family uses.
AGENT_MODELS = {"anthropic": "claude-sonnet-4-5-20250929", "openai": "gpt-4o-2024-08-06"}

IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
SYSTEM_PROMPT = """You are an interactive coding agent working in the user's repository.
Use the tools to read, search, edit and run code; prefer small, verifiable steps.

# Doing tasks
- Understand the request first: read the relevant files and the tests before changing
  anything. Search with Grep and Glob instead of guessing paths.
- Make the smallest change that solves the problem and matches the surrounding code's
  style, naming and error handling. Do not add dependencies without asking.
- After a change, run the project's checks (tests, linters, type checkers) and read their
  output; fix what you broke before moving on.
- Keep the user informed in a sentence or two: what you found, what you changed, what is
  left. Do not pad answers; no preambles, no summaries of what you are about to do.

# Tools
- Bash runs a shell command in the repository; quote paths with spaces and prefer
  non-interactive flags. Long-running commands need a timeout.
- Read shows a file with line numbers; read only the part you need for large files.
- Edit replaces an exact string in a file; the old string must be unique, so include
  enough context. Write creates a file or replaces it whole.
- Task starts a sub-agent for a self-contained search or investigation.

# Safety
- Never run destructive commands (rm -rf, force pushes, resets) without the user's
  explicit approval. Never commit secrets. Ask before changing public interfaces.
"""


@dataclass(frozen=True, slots=True)
class Transcript:
    """A recorded agent session, in one wire format."""

    name: str
    api: str  # anthropic | openai
    model: str
    messages: list[dict[str, Any]]
    system: list[dict[str, Any]] | None  # Anthropic system blocks; None for OpenAI
    tools: list[dict[str, Any]]

    def turns(self) -> list[int]:
        """Indexes of the assistant messages: each is one request's answer."""
        first = 1 if self.api == "openai" and self.messages[0].get("role") == "system" else 0
        return [
            i for i, m in enumerate(self.messages) if m.get("role") == "assistant" and i > first
        ]


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"


def _schemas(calls: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """A JSON schema per tool name from the arguments it was called with."""
    seen: dict[str, list[dict[str, Any]]] = {}
    for name, arguments in calls:
        seen.setdefault(name, []).append(arguments)
    schemas = {}
    for name in sorted(seen):
        uses = seen[name]
        keys = sorted({k for use in uses for k in use})
        schemas[name] = {
            "type": "object",
            "properties": {
                k: {"type": _json_type(next(u[k] for u in uses if k in u))} for k in keys
            },
            "required": [k for k in keys if all(k in u for u in uses)],
        }
    return schemas


def _anthropic_calls(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (b["name"], b.get("input") or {})
        for m in messages
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


def _openai_arguments(raw: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {"input": raw}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


def _openai_calls(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (c["function"]["name"], _openai_arguments(c["function"].get("arguments")))
        for m in messages
        for c in m.get("tool_calls") or []
    ]


def load(path: Path) -> Transcript | None:
    """The transcript in `path` if it is a request body with tool use; else None."""
    body = json.loads(path.read_text(encoding="utf-8"))
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not messages:
        return None
    api = "anthropic" if path.name.endswith(".anthropic.json") else "openai"
    if api == "anthropic":
        calls = _anthropic_calls(messages)
        tools = [
            {"name": name, "description": f"The {name} tool.", "input_schema": schema}
            for name, schema in _schemas(calls).items()
        ]
        system = [{"type": "text", "text": IDENTITY}, {"type": "text", "text": SYSTEM_PROMPT}]
    else:
        calls = _openai_calls(messages)
        tools = body.get("tools") or [
            {
                "type": "function",
                "function": {"name": name, "description": f"The {name} tool.", "parameters": s},
            }
            for name, s in _schemas(calls).items()
        ]
        if messages[0].get("role") != "system":
            messages = [{"role": "system", "content": f"{IDENTITY}\n{SYSTEM_PROMPT}"}, *messages]
        system = None
    if not calls:
        return None
    name = path.name.split(".")[0]
    if name.startswith("4d5611e5") and ".agent-" in path.name:
        name = "4d5611e5.agent"
    return Transcript(
        name=f"{name[:16]} ({api})",
        api=api,
        model=AGENT_MODELS[api],
        messages=messages,
        system=system,
        tools=tools,
    )


def transcripts() -> list[Transcript]:
    """Every request-body transcript with tool use, from tests/data (then ../shared)."""
    found: dict[str, Transcript] = {}
    for folder in DATA:
        for path in sorted(folder.glob("*/*.json")):
            if not path.name.endswith((".anthropic.json", ".openai.json")):
                continue
            if path.name in found:
                continue
            transcript = load(path)
            if transcript is not None:
                found[path.name] = transcript
    return list(found.values())


# -- requests ---------------------------------------------------------------------------


def _marked_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history with a breakpoint on the last content block of the last message."""
    last = copy.deepcopy(messages[-1])
    content = last.get("content")
    if isinstance(content, str):
        last["content"] = [{"type": "text", "text": content, "cache_control": EPHEMERAL}]
    elif isinstance(content, list) and content:
        content[-1]["cache_control"] = EPHEMERAL
    return [*messages[:-1], last]


def anthropic_body(transcript: Transcript, history: list[dict[str, Any]]) -> dict[str, Any]:
    """One Claude Code request: marked system blocks, unmarked tools, marked last message."""
    assert transcript.system is not None
    return {
        "model": transcript.model,
        "max_tokens": 4096,
        "system": [{**block, "cache_control": EPHEMERAL} for block in transcript.system],
        "tools": transcript.tools,
        "messages": _marked_last(history),
    }


def openai_body(transcript: Transcript, history: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """One Chat Completions request, cache-keyed by session."""
    return {
        "model": transcript.model,
        "messages": history,
        "tools": transcript.tools,
        "prompt_cache_key": key,
    }


def reply_of(transcript: Transcript, message: dict[str, Any]) -> Reply:
    """The billing fake's answer for a turn: the transcript's own assistant message."""
    content = message.get("content")
    if transcript.api == "anthropic":
        if isinstance(content, str):
            return Reply(content)
        blocks = content if isinstance(content, list) else []
        text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        uses = tuple(
            ToolUse(b["id"], b["name"], b.get("input") or {})
            for b in blocks
            if b.get("type") == "tool_use"
        )
        return Reply(text, uses)
    if isinstance(content, list):
        content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    uses = tuple(
        ToolUse(c["id"], c["function"]["name"], _openai_arguments(c["function"].get("arguments")))
        for c in message.get("tool_calls") or []
    )
    return Reply(content or "", uses)
