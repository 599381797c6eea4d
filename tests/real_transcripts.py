"""The real agent transcripts of tests/data (other people's agents), as wire-format histories.

Claude Code and OpenHands files are request bodies already; SWE-agent `.traj` files and the
swe_play trajectory list are converted to Chat Completions messages here, keeping what the
agent sent: text-action agents send their tool output as `user` messages, and so do we.
Shared by the fidelity tests and `bench/fidelity.py`; reads `tests/data`, falling back to
`../shared/transcripts` beside the checkout when a folder was not copied.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SHARED = ROOT.parent / "shared" / "transcripts"


@dataclass(frozen=True, slots=True)
class RealTranscript:
    """One recorded history: a short name, its wire format, and the request body."""

    name: str
    agent: str
    format: str
    messages: list[Any]
    tools: list[Any] | None = None
    model: str | None = None


def folder(name: str) -> Path:
    """`tests/data/<name>`, or the shared copy when the tests do not carry it."""
    local = DATA / name
    return local if local.is_dir() else SHARED / name


def load_all() -> list[RealTranscript]:
    """Every transcript, Claude Code first, in a fixed order."""
    return [*claude_code(), *openhands(), *swe_agent(), *swe_play()]


def claude_code() -> list[RealTranscript]:
    found = []
    for path in sorted(folder("claude_code").glob("*.anthropic.json")):
        body = json.loads(path.read_text("utf-8"))
        name = path.name.removesuffix(".anthropic.json")
        found.append(
            RealTranscript(
                name=f"claude_code/{name}",
                agent="claude_code",
                format="anthropic",
                messages=body["messages"],
                tools=body.get("tools"),
                model=body.get("model"),
            )
        )
    return found


def openhands() -> list[RealTranscript]:
    found = []
    for path in sorted(folder("openhands_swegym").glob("*.openai.json")):
        body = json.loads(path.read_text("utf-8"))
        found.append(
            RealTranscript(
                name=f"openhands/{path.name.removesuffix('.openai.json')}",
                agent="openhands",
                format="openai",
                messages=body["messages"],
                tools=body.get("tools"),
                model=body.get("model"),
            )
        )
    return found


def swe_agent() -> list[RealTranscript]:
    found = []
    for path in sorted(folder("swe_agent").glob("*.traj")):
        history = json.loads(path.read_text("utf-8"))["history"]
        found.append(
            RealTranscript(
                name=f"swe_agent/{path.name.removesuffix('.traj')}",
                agent="swe_agent",
                format="openai",
                messages=_swe_agent_messages(history),
            )
        )
    return found


def _swe_agent_messages(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """SWE-agent's history as Chat Completions messages; its call ids repeat, so every call
    gets a fresh one (the recorded id, numbered) and its observation answers that one."""
    messages: list[dict[str, Any]] = []
    pending: list[str] = []
    for number, entry in enumerate(history):
        role = entry["role"]
        content = entry.get("content") or ""
        if role == "assistant" and entry.get("tool_calls"):
            calls = []
            for call in entry["tool_calls"]:
                call_id = f"{call.get('id') or 'call'}_{number}"
                pending.append(call_id)
                function = call["function"]
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": function["name"],
                            "arguments": function.get("arguments") or "{}",
                        },
                    }
                )
            messages.append({"role": "assistant", "content": content, "tool_calls": calls})
        elif role == "tool":
            call_id = pending.pop(0) if pending else f"orphan_{number}"
            messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        else:
            messages.append({"role": role, "content": content})
    return messages


def swe_play() -> list[RealTranscript]:
    path = folder("swe_play") / "swe-play-trajectories.sample_raw.json"
    runs = json.loads(path.read_text("utf-8"))
    return [
        RealTranscript(
            name=f"swe_play/{run['id']}",
            agent="swe_play",
            format="openai",
            messages=[{"role": m["role"], "content": m["content"]} for m in run["messages"]],
        )
        for run in runs
    ]
