"""Anthropic prompt caching, as the Messages API documents it.

- The prompt is one sequence of blocks in the order tools → system → messages (each tool
  definition, each system text block, each content block of each message; a string is
  one text block). A block's `cache_control` makes a breakpoint there: the prefix up to
  and including that block can be written to the cache.
- At most 4 breakpoints per request, a top-level `cache_control` (automatic caching:
  a breakpoint on the last block) counted among them; more → 400 `invalid_request_error`
  "A maximum of 4 blocks with cache_control may be provided. Found N."
- Lookback: each breakpoint checks its own position and the earlier block boundaries,
  20 positions in all (the docs' ~20-block lookback window), for an entry an earlier
  request wrote; the longest one found is read. Entries are written only at
  breakpoints; the lookback never creates one.
- A breakpoint whose prefix is shorter than the model's minimum cacheable length writes
  nothing (no error), its tokens are billed with the next breakpoint that does write.
- `ttl` "5m" (default) or "1h"; an entry lives that long after it was written or last
  read (a read refreshes it at no cost), on the fake's simulated clock.
- Billing: `cache_read_input_tokens` = the prefix read; `cache_creation_input_tokens` =
  from there to the last breakpoint that writes (split by TTL in `cache_creation`);
  `input_tokens` = the rest, after the last written breakpoint.
- The prefix is compared by content: the canonical JSON of each block without its
  `cache_control`, chained with everything before it and the model name.

Also refused as the API does: a `tool_use` without its `tool_result` in the next message,
and a `tool_result` whose `tool_use` is not in the previous one.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

from tests.billing.prices import ModelPrice
from tests.billing.refusals import anthropic_refusal
from tests.billing.tokens import count_text

MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
# Framing the API adds around content; a fixed guess, the same on every request.
BLOCK_FRAMING_TOKENS = 4
MESSAGE_FRAMING_TOKENS = 3
# A placeholder price for an image block (the largest image Claude takes, ~1.15 MP/750).
IMAGE_TOKENS = 1600


@dataclass(frozen=True, slots=True)
class PromptBlock:
    """One block of the prompt: where it is, what it costs, and its breakpoint."""

    where: str
    tokens: int
    digest: str  # of the prefix up to and including this block
    ttl: str | None  # the breakpoint's TTL, None without one
    marks: int  # cache_control objects in the block (nested ones too)


@dataclass(frozen=True, slots=True)
class CacheUsage:
    """One request's input tokens as the API splits them."""

    uncached: int
    read: int
    write_5m: int
    write_1h: int
    breakpoints: int

    def usage(self, output_tokens: int) -> dict[str, Any]:
        """The `usage` object of the answer, as the API reports it."""
        return {
            "input_tokens": self.uncached,
            "cache_creation_input_tokens": self.write_5m + self.write_1h,
            "cache_read_input_tokens": self.read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.write_5m,
                "ephemeral_1h_input_tokens": self.write_1h,
            },
            "output_tokens": output_tokens,
            "service_tier": "standard",
        }


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def _marks(value: Any) -> int:
    if isinstance(value, dict):
        own = 1 if isinstance(value.get("cache_control"), dict) else 0
        return own + sum(_marks(v) for k, v in value.items() if k != "cache_control")
    if isinstance(value, list):
        return sum(_marks(v) for v in value)
    return 0


def _ttl(block: dict[str, Any], where: str) -> str | None:
    """The TTL of the breakpoint on `block` (or nested in it), None without one."""
    found: list[Any] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "cache_control" in value:
                found.append(value["cache_control"])
            for key, item in value.items():
                if key != "cache_control":
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(block)
    if not found:
        return None
    control = found[-1]
    if not isinstance(control, dict) or control.get("type") != "ephemeral":
        raise anthropic_refusal(
            400, "invalid_request_error", f"{where}.cache_control.type: Input should be 'ephemeral'"
        )
    ttl = control.get("ttl", "5m")
    if ttl not in TTL_SECONDS:
        raise anthropic_refusal(
            400, "invalid_request_error", f"{where}.cache_control.ttl: Input should be '5m' or '1h'"
        )
    return str(ttl)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_rendering(c) for c in content if isinstance(c, dict))
    return ""


def _rendering(block: dict[str, Any]) -> str:
    """The text a block puts in front of the model (what is counted)."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return f"{block.get('name', '')}\n{json.dumps(block.get('input'), ensure_ascii=False)}"
    if kind == "tool_result":
        return _text_of(block.get("content", ""))
    if kind == "thinking":
        return str(block.get("thinking", ""))
    if kind == "compaction":
        return str(block.get("content") or "")
    return json.dumps(_without_cache_control(block), ensure_ascii=False)


def _tokens(block: dict[str, Any]) -> int:
    if block.get("type") == "image":
        return IMAGE_TOKENS
    return count_text(_rendering(block)) + BLOCK_FRAMING_TOKENS


def _canonical(block: Any) -> str:
    stripped = _without_cache_control(block)
    if isinstance(stripped, dict):
        # A block's own key order is not part of the prompt; nested values keep theirs.
        stripped = dict(sorted(stripped.items()))
    return json.dumps(stripped, ensure_ascii=False, separators=(",", ":"))


def _as_blocks(content: Any, where: str) -> list[tuple[dict[str, Any], str]]:
    if isinstance(content, str):
        return [({"type": "text", "text": content}, where)]
    if not isinstance(content, list):
        raise anthropic_refusal(
            400, "invalid_request_error", f"{where}: Input should be a valid list"
        )
    blocks = []
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            raise anthropic_refusal(
                400, "invalid_request_error", f"{where}.{index}: Input should be an object"
            )
        blocks.append((block, f"{where}.{index}"))
    return blocks


def prompt_blocks(body: dict[str, Any]) -> list[PromptBlock]:
    """The request's prompt as blocks in cache order, each with its chained digest."""
    model = str(body.get("model", ""))
    parts: list[tuple[str, dict[str, Any], str, int]] = []  # role tag, block, where, framing
    for index, tool in enumerate(body.get("tools") or []):
        if isinstance(tool, dict):
            parts.append(("tool", tool, f"tools.{index}", 0))
    system = body.get("system")
    if system is not None:
        for block, where in _as_blocks(system, "system"):
            parts.append(("system", block, where, 0))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise anthropic_refusal(400, "invalid_request_error", "messages: Field required")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise anthropic_refusal(
                400,
                "invalid_request_error",
                f"messages.{index}.role: Input should be 'user' or 'assistant'",
            )
        role = str(message["role"])
        for position, (block, where) in enumerate(
            _as_blocks(message.get("content"), f"messages.{index}.content")
        ):
            framing = MESSAGE_FRAMING_TOKENS if position == 0 else 0
            parts.append((role if position == 0 else "+", block, where, framing))
    digest = hashlib.sha256(model.encode())
    blocks = []
    for tag, block, where, framing in parts:
        digest.update(b"\x00" + tag.encode() + b"\x00" + _canonical(block).encode())
        tokens = (
            count_text(json.dumps(_without_cache_control(block), ensure_ascii=False))
            if tag == "tool"
            else _tokens(block)
        )
        blocks.append(
            PromptBlock(
                where=where,
                tokens=tokens + framing,
                digest=digest.copy().hexdigest(),
                ttl=_ttl(block, where),
                marks=_marks(block),
            )
        )
    return blocks


def check_tool_pairs(messages: list[Any]) -> None:
    """Refuses what the API refuses: tool uses and results that are not paired up."""
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        if message.get("role") == "assistant" and index + 1 < len(messages):
            uses = [
                b.get("id") for b in content if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            following = messages[index + 1]
            answered = {
                b.get("tool_use_id")
                for b in (following.get("content") if isinstance(following, dict) else None) or []
                if isinstance(b, dict) and b.get("type") == "tool_result"
            }
            missing = [u for u in uses if u not in answered]
            if missing:
                raise anthropic_refusal(
                    400,
                    "invalid_request_error",
                    f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(map(str, missing))}. Each `tool_use` block "
                    "must have a corresponding `tool_result` block in the next message.",
                )
        if message.get("role") == "user":
            previous = messages[index - 1] if index > 0 else {}
            called = {
                b.get("id")
                for b in (previous.get("content") if isinstance(previous, dict) else None) or []
                if isinstance(b, dict) and b.get("type") == "tool_use"
            }
            for position, block in enumerate(content):
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                if block.get("tool_use_id") not in called:
                    raise anthropic_refusal(
                        400,
                        "invalid_request_error",
                        f"messages.{index}.content.{position}: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {block.get('tool_use_id')}. Each `tool_result` "
                        "block must have a corresponding `tool_use` block in the previous message.",
                    )


@dataclass(slots=True)
class _Entry:
    expires: float
    ttl: float


class AnthropicCache:
    """One organization's prompt cache: entries by prefix digest, expiring on `clock`."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()

    def bill(self, body: dict[str, Any], price: ModelPrice, now: float) -> CacheUsage:
        """Reads and writes the cache for `body`; raises `Refused` as the API would."""
        blocks = prompt_blocks(body)
        check_tool_pairs(body["messages"])
        marks = sum(b.marks for b in blocks)
        breakpoints = {i: b.ttl for i, b in enumerate(blocks) if b.ttl is not None}
        automatic = body.get("cache_control")
        if automatic is not None:
            marks += 1
            breakpoints.setdefault(
                len(blocks) - 1, _ttl({"cache_control": automatic}, "cache_control") or "5m"
            )
        if marks > MAX_BREAKPOINTS:
            raise anthropic_refusal(
                400,
                "invalid_request_error",
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {marks}.",
            )
        cumulative: list[int] = []
        total = 0
        for block in blocks:
            total += block.tokens
            cumulative.append(total)
        with self._lock:
            self._expire(now)
            hit = -1
            for position in sorted(breakpoints):
                for earlier in range(position, max(-1, position - LOOKBACK_BLOCKS), -1):
                    if blocks[earlier].digest in self._entries:
                        hit = max(hit, earlier)
                        break
            if hit >= 0:
                entry = self._entries[blocks[hit].digest]
                entry.expires = now + entry.ttl
            read = cumulative[hit] if hit >= 0 else 0
            covered = read
            written = {"5m": 0, "1h": 0}
            for position in sorted(breakpoints):
                if position <= hit or cumulative[position] < price.min_cacheable:
                    continue
                ttl = breakpoints[position] or "5m"
                written[ttl] += cumulative[position] - covered
                covered = cumulative[position]
                self._entries[blocks[position].digest] = _Entry(
                    now + TTL_SECONDS[ttl], TTL_SECONDS[ttl]
                )
        return CacheUsage(
            uncached=total - covered,
            read=read,
            write_5m=written["5m"],
            write_1h=written["1h"],
            breakpoints=marks,
        )

    def _expire(self, now: float) -> None:
        for digest in [d for d, e in self._entries.items() if e.expires <= now]:
            del self._entries[digest]

    def __len__(self) -> int:
        return len(self._entries)
