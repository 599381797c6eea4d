"""Converts a Chat Completions transcript into Gemini API `contents`.

Used by the Gemini tests on the real Claude Code transcripts (tests/data/claude_code, see
LICENSE.spotter there); run at test time, so no converted copy is stored. User text →
a `user` content with a text part; assistant text → a `model` content; each tool call →
a `functionCall` part **without an id** (the Gemini Developer API sends none, so the
service must pair calls and responses by name and order); consecutive tool messages →
one `user` content of `functionResponse` parts, as Gemini's parallel function calling
sends them. Each model turn that calls tools carries a `thoughtSignature` on its first
call part and a `thought` part before it, as Gemini 3 answers. Leading system messages
become `systemInstruction`.

    python tests/data/to_gemini.py IN.openai.json OUT.gemini.json
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
    return ""


def convert(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """`{systemInstruction?, contents}` for a Chat Completions history."""
    names: dict[str, str] = {}
    contents: list[dict[str, Any]] = []
    system: list[str] = []
    for index, message in enumerate(messages):
        role, content = message["role"], message.get("content")
        if role in ("system", "developer") and not contents:
            system.append(_text(content))
            continue
        if role == "tool":
            response = {
                "functionResponse": {
                    "name": names.get(message["tool_call_id"], "tool"),
                    "response": {"output": _text(content)},
                }
            }
            last = contents[-1] if contents else None
            if last and last["role"] == "user" and "functionResponse" in last["parts"][-1]:
                last["parts"].append(response)
            else:
                contents.append({"role": "user", "parts": [response]})
            continue
        text = _text(content)
        if role == "assistant":
            parts: list[dict[str, Any]] = []
            calls = message.get("tool_calls") or []
            if calls:
                parts.append({"text": "Deciding the next step.", "thought": True})
            if text:
                parts.append({"text": text})
            for n, call in enumerate(calls):
                names[call["id"]] = call["function"]["name"]
                part: dict[str, Any] = {
                    "functionCall": {
                        "name": call["function"]["name"],
                        "args": json.loads(call["function"]["arguments"] or "{}"),
                    }
                }
                if n == 0:
                    signature = base64.b64encode(f"sig-{index}".encode()).decode()
                    part["thoughtSignature"] = signature
                parts.append(part)
            contents.append({"role": "model", "parts": parts or [{"text": ""}]})
            continue
        contents.append({"role": "user", "parts": [{"text": text}]})
    out: dict[str, Any] = {"contents": contents}
    if system:
        out["systemInstruction"] = {"parts": [{"text": "\n".join(system)}]}
    return out


if __name__ == "__main__":
    source = json.loads(open(sys.argv[1], encoding="utf-8").read())
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        json.dump(convert(source["messages"]), handle, indent=1, ensure_ascii=False)
        handle.write("\n")
