"""Converts a Chat Completions transcript into OpenAI Responses `input` items.

Used once to make tests/data/claude_code/tool_heavy.responses.json from the real
tool_heavy.openai.json transcript (kept here so the conversion can be checked and redone):
assistant text → an assistant `message` item with `output_text`, each tool call → a
`function_call` item, each tool message → a `function_call_output` item, user text → a
user `message` item with `input_text`. A `reasoning` item is put before every assistant
turn that calls tools, as reasoning models emit them.

    python tests/data/to_responses.py IN.openai.json OUT.responses.json
"""

from __future__ import annotations

import json
import sys
from typing import Any


def convert(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        role, content = message["role"], message.get("content")
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message["tool_call_id"],
                    "output": content if isinstance(content, str) else json.dumps(content),
                }
            )
            continue
        text = content if isinstance(content, str) else ""
        if isinstance(content, list):
            text = "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if calls:
                items.append(
                    {
                        "type": "reasoning",
                        "id": f"rs_{index:04d}",
                        "summary": [{"type": "summary_text", "text": "Deciding the next step."}],
                        "encrypted_content": None,
                    }
                )
            if text:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "id": f"msg_{index:04d}",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                )
            for call in calls:
                items.append(
                    {
                        "type": "function_call",
                        "id": f"fc_{call['id']}",
                        "call_id": call["id"],
                        "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"],
                        "status": "completed",
                    }
                )
            continue
        part = "input_text"
        items.append({"type": "message", "role": role, "content": [{"type": part, "text": text}]})
    return items


if __name__ == "__main__":
    source = json.loads(open(sys.argv[1], encoding="utf-8").read())
    out = {"model": source.get("model", "gpt-5"), "input": convert(source["messages"])}
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        json.dump(out, handle, indent=1, ensure_ascii=False)
        handle.write("\n")
