"""OpenAI prompt caching, as the prompt-caching guide documents it (models before the
GPT-5.6 family).

- Automatic: a prompt of 1024 tokens or more is cached after it is processed; a later
  prompt that starts with the same tokens reads the longest cached prefix, in steps of
  128 tokens past the first 1024 (`cached_tokens` is 0, 1024, 1152, 1280, …).
- Routing: requests go to machines by a hash of the prompt's start combined with
  `prompt_cache_key`; here a different key (or none) is a different cache, so a key
  routes a session's turns together and two keys never share.
- Lifetime: in-memory caches are cleared after 5–10 minutes of inactivity; the fake uses
  5 minutes (refreshed on every read), 24 hours with `prompt_cache_retention: "24h"`.
- Writes are free; reads cost the model's cached-input price (`prices.OPENAI`).
- The prompt is the tools, then each message (Chat Completions) or `instructions`, tools
  and each input item (Responses), rendered as text and counted with o200k, plus the
  published framing (3 tokens per message, 3 to prime the reply). The common prefix of
  two prompts is the identical messages plus the common start of the first that differs.

Also refused as the API does: tool calls without their tool messages, and tool messages
or `function_call_output` items without their call.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

from tests.billing.prices import OPENAI_CACHE_STEP, ModelPrice
from tests.billing.refusals import openai_refusal
from tests.billing.tokens import common_prefix_chars, count_text

MESSAGE_FRAMING_TOKENS = 3
REPLY_PRIMING_TOKENS = 3
IN_MEMORY_SECONDS = 300.0
EXTENDED_SECONDS = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Segment:
    """One message (or the tools) of a prompt: its text and token count."""

    digest: str
    text: str
    tokens: int


def _segment(text: str, framing: int = MESSAGE_FRAMING_TOKENS) -> Segment:
    return Segment(hashlib.sha256(text.encode()).hexdigest(), text, count_text(text) + framing)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            if isinstance(part, dict) and "text" in part
            # Images, audio and files: their JSON (the bytes decide the cache too).
            else json.dumps(part, ensure_ascii=False, sort_keys=True)
            for part in content
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def chat_segments(body: dict[str, Any]) -> list[Segment]:
    """A Chat Completions prompt as segments, tools first."""
    segments = []
    tools = body.get("tools")
    if tools:
        segments.append(_segment("tools\n" + json.dumps(tools, ensure_ascii=False), 0))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise openai_refusal(400, "Missing required parameter: 'messages'.", param="messages")
    for message in messages:
        if not isinstance(message, dict):
            raise openai_refusal(400, "Invalid type for 'messages': expected an object.")
        text = f"{message.get('role')}\n{_content_text(message.get('content'))}"
        if message.get("tool_calls"):
            text += "\n" + json.dumps(message["tool_calls"], ensure_ascii=False)
        if message.get("tool_call_id"):
            text = f"{text}\n{message['tool_call_id']}"
        segments.append(_segment(text))
    return segments


def responses_segments(body: dict[str, Any]) -> list[Segment]:
    """A Responses prompt as segments: instructions, tools, then each input item."""
    segments = []
    if body.get("instructions"):
        segments.append(_segment(f"developer\n{body['instructions']}"))
    if body.get("tools"):
        segments.append(_segment("tools\n" + json.dumps(body["tools"], ensure_ascii=False), 0))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise openai_refusal(400, "Missing required parameter: 'input'.", param="input")
    for item in items:
        if isinstance(item, dict) and "role" in item and item.get("type", "message") == "message":
            text = f"{item['role']}\n{_content_text(item.get('content'))}"
        else:
            text = json.dumps(item, ensure_ascii=False, sort_keys=True)
        segments.append(_segment(text))
    return segments


def check_chat_tool_pairs(messages: list[Any]) -> None:
    """Refuses tool calls without their tool messages and tool messages without a call."""
    pending: list[str] = []
    opened_at = 0
    called: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in called:
                raise openai_refusal(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    param=f"messages.[{index}].role",
                )
            if call_id in pending:
                pending.remove(call_id)
            continue
        if pending:
            raise openai_refusal(
                400,
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}",
                param=f"messages.[{opened_at}].role",
            )
        called = set()
        if role == "assistant" and message.get("tool_calls"):
            pending = [str(c.get("id")) for c in message["tool_calls"] if isinstance(c, dict)]
            called = set(pending)
            opened_at = index
    if pending:
        raise openai_refusal(
            400,
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(pending)}",
            param=f"messages.[{opened_at}].role",
        )


def check_responses_tool_pairs(items: Any) -> None:
    """Refuses a `function_call_output` whose `function_call` is not in the input."""
    if not isinstance(items, list):
        return
    calls: set[Any] = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            calls.add(item.get("call_id"))
        if item.get("type") == "function_call_output" and item.get("call_id") not in calls:
            raise openai_refusal(
                400,
                f"No tool call found for function call output with call_id {item.get('call_id')}.",
                param="input",
            )


@dataclass(slots=True)
class _Entry:
    segments: tuple[Segment, ...]
    expires: float
    lifetime: float


def _common_tokens(current: list[Segment], cached: tuple[Segment, ...]) -> int:
    tokens = 0
    for mine, theirs in zip(current, cached, strict=False):
        if mine.digest == theirs.digest:
            tokens += mine.tokens
            continue
        same = common_prefix_chars(mine.text, theirs.text)
        # The last token of the common text may tokenize differently: not counted.
        return tokens + max(0, count_text(mine.text[:same]) - 1) if same else tokens
    return tokens


@dataclass(frozen=True, slots=True)
class PromptUsage:
    prompt_tokens: int
    cached: int


class OpenAICache:
    """One organization's prompt caches, one per (model, prompt_cache_key)."""

    def __init__(self) -> None:
        self._partitions: dict[tuple[str, str | None], list[_Entry]] = {}
        self._lock = threading.Lock()

    def bill(
        self,
        segments: list[Segment],
        model: str,
        cache_key: str | None,
        retention: str | None,
        price: ModelPrice,
        now: float,
    ) -> PromptUsage:
        """Cached tokens of this prompt; stores it for the next request."""
        total = sum(s.tokens for s in segments) + REPLY_PRIMING_TOKENS
        lifetime = EXTENDED_SECONDS if retention == "24h" else IN_MEMORY_SECONDS
        with self._lock:
            entries = self._partitions.setdefault((model, cache_key), [])
            entries[:] = [e for e in entries if e.expires > now]
            best, best_entry = 0, None
            for entry in entries:
                common = _common_tokens(segments, entry.segments)
                if common > best:
                    best, best_entry = common, entry
            cached = 0
            if total >= price.min_cacheable and best >= price.min_cacheable:
                steps = (best - price.min_cacheable) // OPENAI_CACHE_STEP
                cached = price.min_cacheable + steps * OPENAI_CACHE_STEP
            if best_entry is not None and cached:
                best_entry.expires = now + best_entry.lifetime
            if total >= price.min_cacheable:
                mine = tuple(segments)
                # An entry this prompt extends message for message is covered by it.
                entries[:] = [
                    e
                    for e in entries
                    if not (
                        len(e.segments) <= len(mine)
                        and all(
                            a.digest == b.digest for a, b in zip(e.segments, mine, strict=False)
                        )
                    )
                ]
                entries.append(_Entry(mine, now + lifetime, lifetime))
        return PromptUsage(total, cached)
