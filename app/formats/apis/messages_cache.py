"""Anthropic prompt-cache breakpoints on a request whose history the service rewrote
(SPEC §15): a session's context, a compacted history, an edited one.

The rule, in the order it applies:
1. The caller's breakpoints are the ones of the request it just sent: its `tools`,
   `system` and top-level `cache_control` are forwarded as sent, and its messages'
   breakpoints go onto the forwarded messages they match, walking back from the last
   message for as long as the forwarded history ends with the caller's own messages
   (compared without their breakpoints). A breakpoint on a message that was folded into
   a summary has nothing to match and is dropped; a stored message never brings the
   breakpoint of the request it came in (the session context arrives without them).
2. When the request uses prompt caching at all, the summary message gets a breakpoint of
   its own, so the compacted prefix is written once and read on every later turn: with
   the TTL of the nearest breakpoint after it (the API wants longer TTLs first; the
   top-level one marks the last block), else the default 5 minutes. Only when there is
   room under the limit.
3. Never more than the API's 4 breakpoints in all: beyond, message breakpoints are
   dropped oldest first (tools, system and the newest messages keep theirs).

Pure: the bodies are never modified; changed messages are copies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.formats.anthropic import (
    CACHE_CONTROL,
    breakpoint_count,
    has_breakpoint,
    without_breakpoint,
)

# The Messages API refuses a request with more blocks carrying cache_control.
MAX_BREAKPOINTS = 4
DEFAULT_BREAKPOINT: dict[str, Any] = {"type": "ephemeral"}


def with_cache_breakpoints(
    sent: Mapping[str, Any], forwarded: dict[str, Any], summary_at: int | None
) -> dict[str, Any]:
    """`forwarded` (rebuilt from the caller's `sent` request) with the breakpoints of the
    module docstring; the summary message is at `summary_at` in its history (None: none)."""
    history = forwarded.get("messages")
    if not isinstance(history, list):
        return forwarded
    caller = sent.get("messages")
    messages = _callers_marks(caller if isinstance(caller, list) else [], history)
    fixed = _fixed_breakpoints(sent)
    caches = fixed > 0 or any(has_breakpoint(m) for m in messages) or _marks_any(caller)
    room = fixed + sum(breakpoint_count(m) for m in messages) < MAX_BREAKPOINTS
    if caches and room and summary_at is not None and 0 <= summary_at < len(messages):
        control = _control_after(messages, summary_at, sent.get(CACHE_CONTROL))
        messages[summary_at] = _marked(messages[summary_at], control)
    messages = _capped(messages, MAX_BREAKPOINTS - fixed)
    if all(a is b for a, b in zip(messages, history, strict=True)):
        return forwarded
    return {**forwarded, "messages": messages}


def _marks_any(caller: Any) -> bool:
    return isinstance(caller, list) and any(has_breakpoint(m) for m in caller)


def _fixed_breakpoints(body: Mapping[str, Any]) -> int:
    """The breakpoints outside the messages: tools, system, top-level `cache_control`
    (automatic caching puts one on the last block)."""
    top = 1 if isinstance(body.get(CACHE_CONTROL), dict) else 0
    return top + breakpoint_count(body.get("tools")) + breakpoint_count(body.get("system"))


def _callers_marks(caller: Sequence[Any], history: Sequence[Any]) -> list[Any]:
    """`history` with the caller's own messages (and their breakpoints) where its tail
    is the caller's tail."""
    out = list(history)
    marked = [i for i in range(1, len(caller) + 1) if has_breakpoint(caller[-i])]
    if not marked:
        return out
    for back in range(1, min(max(marked), len(out)) + 1):
        mine, theirs = out[-back], caller[-back]
        if mine is theirs:
            continue
        if without_breakpoint(mine) != without_breakpoint(theirs):
            break
        out[-back] = theirs
    return out


def _control_after(messages: Sequence[Any], index: int, top: Any) -> dict[str, Any]:
    """The `cache_control` of the nearest breakpoint after `messages[index]`: a message's,
    else the top-level one (automatic caching marks the last block), else the default."""
    for message in messages[index + 1 :]:
        found = _first_control(message)
        if found is not None:
            return dict(found)
    return dict(top) if isinstance(top, dict) else dict(DEFAULT_BREAKPOINT)


def _first_control(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        control = value.get(CACHE_CONTROL)
        if isinstance(control, dict):
            return control
        values: Any = [v for k, v in value.items() if k != CACHE_CONTROL]
    elif isinstance(value, list):
        values = value
    else:
        return None
    for item in values:
        found = _first_control(item)
        if found is not None:
            return found
    return None


def _marked(message: Any, control: dict[str, Any]) -> Any:
    """`message` with a breakpoint on its last content block (a string becomes one text
    block: the same prompt to the model and to the cache)."""
    if not isinstance(message, dict):
        return message
    content = message.get("content")
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, list) and content and isinstance(content[-1], dict):
        blocks = list(content)
    else:
        return message
    blocks[-1] = {**blocks[-1], CACHE_CONTROL: control}
    return {**message, "content": blocks}


def _capped(messages: list[Any], room: int) -> list[Any]:
    """`messages` with at most `room` breakpoints: the oldest ones go first."""
    excess = sum(breakpoint_count(m) for m in messages) - max(0, room)
    for index, message in enumerate(messages):
        if excess <= 0:
            break
        count = breakpoint_count(message)
        if count:
            messages[index] = without_breakpoint(message)
            excess -= count
    return messages
