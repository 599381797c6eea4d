"""Anthropic `context_management` (SPEC §11): the edits a Messages request asks for, and the
wire-level pieces of honouring them (thinking blocks cleared, compaction blocks found).

The shapes are the `anthropic` SDK's beta types: `BetaClearToolUses20250919EditParam`,
`BetaClearThinking20251015EditParam`, `BetaCompact20260112EditParam`,
`BetaCompactionBlockParam`. Pure: no I/O; messages are never modified, changed ones are
copies and unchanged ones the very same objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.errors import CompactionRequestError, InvalidContextManagementError
from app.engine.native_edits import (
    DEFAULT_CLEAR_KEEP_TOOL_USES,
    DEFAULT_CLEAR_TRIGGER,
    DEFAULT_COMPACT_TRIGGER_TOKENS,
    DEFAULT_KEEP_THINKING_TURNS,
    ClearThinkingEdit,
    ClearToolUsesEdit,
    CompactEdit,
    CompactionMark,
    Edit,
    OnDemandCompaction,
    Trigger,
)
from app.formats.common import type_name

CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
COMPACT = "compact_20260112"
EDIT_TYPES = (CLEAR_TOOL_USES, CLEAR_THINKING, COMPACT)
COMPACTION_BLOCK = "compaction"
ON_DEMAND_TYPES = ("summarize",)
# The vendor's limit on `compaction.instructions`.
MAX_INSTRUCTIONS_CHARS = 16_384
_THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})


def _bad(where: str, problem: str) -> InvalidContextManagementError:
    return InvalidContextManagementError(f"{where}: {problem}", where=where)


def parse_context_management(value: Any) -> tuple[Edit, ...]:
    """The edits of a request's `context_management`, in the order they apply."""
    where = "context_management"
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise _bad(where, f"must be an object with an edits array, got {type_name(value)}")
    _refuse_unknown(value, {"edits"}, where)
    edits = value.get("edits")
    if edits is None:
        return ()
    if not isinstance(edits, list):
        raise _bad(f"{where}.edits", f"must be an array of edits, got {type_name(edits)}")
    return tuple(_edit(edit, f"{where}.edits[{i}]") for i, edit in enumerate(edits))


def _edit(raw: Any, where: str) -> Edit:
    if not isinstance(raw, dict):
        raise _bad(where, f"each edit must be an object, got {type_name(raw)}")
    kind = raw.get("type")
    if kind == CLEAR_TOOL_USES:
        return _clear_tool_uses(raw, where)
    if kind == CLEAR_THINKING:
        _refuse_unknown(raw, {"type", "keep"}, where)
        return ClearThinkingEdit(
            CLEAR_THINKING, keep_turns=_thinking_keep(raw.get("keep"), f"{where}.keep")
        )
    if kind == COMPACT:
        return _compact(raw, where)
    raise _bad(
        f"{where}.type",
        f"unknown context management edit type {kind!r}; the service honours "
        f"{', '.join(EDIT_TYPES)}",
    )


def _clear_tool_uses(raw: dict[str, Any], where: str) -> ClearToolUsesEdit:
    _refuse_unknown(
        raw,
        {"type", "trigger", "keep", "clear_at_least", "exclude_tools", "clear_tool_inputs"},
        where,
    )
    trigger = DEFAULT_CLEAR_TRIGGER
    if raw.get("trigger") is not None:
        kind, value = _typed_count(
            raw["trigger"], f"{where}.trigger", ("input_tokens", "tool_uses")
        )
        trigger = Trigger(kind, value)
    keep = DEFAULT_CLEAR_KEEP_TOOL_USES
    if raw.get("keep") is not None:
        keep = _typed_count(raw["keep"], f"{where}.keep", ("tool_uses",))[1]
    clear_at_least = 0
    if raw.get("clear_at_least") is not None:
        clear_at_least = _typed_count(
            raw["clear_at_least"], f"{where}.clear_at_least", ("input_tokens",)
        )[1]
    exclude = _names(raw.get("exclude_tools"), f"{where}.exclude_tools")
    inputs_raw = raw.get("clear_tool_inputs")
    inputs: bool | tuple[str, ...]
    if inputs_raw is None or isinstance(inputs_raw, bool):
        inputs = bool(inputs_raw)
    else:
        inputs = _names(inputs_raw, f"{where}.clear_tool_inputs")
    return ClearToolUsesEdit(CLEAR_TOOL_USES, trigger, keep, clear_at_least, exclude, inputs)


def _compact(raw: dict[str, Any], where: str) -> CompactEdit:
    _refuse_unknown(raw, {"type", "trigger", "instructions", "pause_after_compaction"}, where)
    trigger = DEFAULT_COMPACT_TRIGGER_TOKENS
    if raw.get("trigger") is not None:
        trigger = _typed_count(raw["trigger"], f"{where}.trigger", ("input_tokens",))[1]
    instructions = raw.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise _bad(f"{where}.instructions", f"must be a string, got {type_name(instructions)}")
    pause = raw.get("pause_after_compaction", False)
    if not isinstance(pause, bool):
        raise _bad(f"{where}.pause_after_compaction", f"must be a boolean, got {type_name(pause)}")
    return CompactEdit(COMPACT, trigger, instructions or None, pause)


def _thinking_keep(value: Any, where: str) -> int | None:
    if value is None:
        return DEFAULT_KEEP_THINKING_TURNS
    # `"all"`, the SDK's BetaAllThinkingTurnsParam `{"type": "all"}`, and the documented
    # `{"type": "all_thinking_turns"}` all keep every turn's thinking.
    if value == "all" or value in ({"type": "all"}, {"type": "all_thinking_turns"}):
        return None
    return _typed_count(value, where, ("thinking_turns",))[1]


def _typed_count(value: Any, where: str, kinds: tuple[str, ...]) -> tuple[str, int]:
    """A `{type, value}` object such as `{"type": "input_tokens", "value": 30000}`."""
    shapes = " or ".join(f'{{"type": "{k}", "value": <integer>}}' for k in kinds)
    if not isinstance(value, dict) or value.get("type") not in kinds:
        raise _bad(where, f"must be {shapes}, got {value!r}")
    _refuse_unknown(value, {"type", "value"}, where)
    number = value.get("value")
    if not isinstance(number, int) or isinstance(number, bool) or number < 0:
        raise _bad(f"{where}.value", f"must be a non-negative integer, got {number!r}")
    return str(value["type"]), number


def _names(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(where, f"must be an array of tool names, got {value!r}")
    return tuple(value)


def _refuse_unknown(raw: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(raw) - known)
    if unknown:
        raise _bad(
            where, f"unknown field {unknown[0]!r}; this object takes {', '.join(sorted(known))}"
        )


# --- on-demand compaction (compact-2026-09-04) ---------------------------------------


def parse_on_demand(body: Mapping[str, Any]) -> OnDemandCompaction | None:
    """The request's top-level `compaction` (BetaCompactionConfigParam), if it has one."""
    value = body.get("compaction")
    if value is None:
        return None
    if "context_management" in body:
        raise CompactionRequestError(
            "compaction: cannot be combined with context_management; send one or the other"
        )
    if not isinstance(value, dict):
        raise CompactionRequestError(f"compaction: must be an object, got {type_name(value)}")
    if value.get("type") not in ON_DEMAND_TYPES:
        raise CompactionRequestError(
            f"compaction.type: unknown type {value.get('type')!r}; use {', '.join(ON_DEMAND_TYPES)}"
        )
    unknown = sorted(set(value) - {"type", "instructions"})
    if unknown:
        raise CompactionRequestError(
            f"compaction: unknown field {unknown[0]!r}; this object takes type and instructions"
        )
    instructions = value.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise CompactionRequestError(
            f"compaction.instructions: must be a string, got {type_name(instructions)}"
        )
    if instructions is not None and len(instructions) > MAX_INSTRUCTIONS_CHARS:
        raise CompactionRequestError(
            f"compaction.instructions: {len(instructions):,} characters, more than the "
            f"{MAX_INSTRUCTIONS_CHARS:,} allowed"
        )
    # Empty or whitespace-only instructions count as absent (the vendor's rule).
    return OnDemandCompaction(instructions if instructions and instructions.strip() else None)


def check_signed_blocks(messages: Sequence[Any]) -> None:
    """A signed compaction block (an on-demand compaction's) must be the very first block
    of `messages`: it stands for everything before the messages the caller kept."""
    for i, raw in enumerate(messages):
        for j, block in enumerate(_blocks(raw)):
            if _is_compaction(block) and block.get("signature") is not None and (i, j) != (0, 0):
                raise CompactionRequestError(
                    f"messages[{i}].content[{j}]: a compaction block must be the first block "
                    "of the first message; send it first, then the messages to keep",
                    code="compaction_block_misplaced",
                )


def ends_with_unanswered_tool_use(messages: Sequence[Any]) -> bool:
    """True when the last assistant turn calls a tool that no later message answers."""
    for i in range(len(messages) - 1, -1, -1):
        raw = messages[i]
        if not isinstance(raw, dict) or raw.get("role") != "assistant":
            continue
        calls = {
            b.get("id") for b in _blocks(raw) if isinstance(b, dict) and b.get("type") == "tool_use"
        }
        answered = {
            b.get("tool_use_id")
            for later in messages[i + 1 :]
            for b in _blocks(later)
            if isinstance(b, dict) and b.get("type") == "tool_result"
        }
        return bool(calls - answered)
    return False


# --- compaction blocks -------------------------------------------------------------


def _blocks(raw: Any) -> list[Any]:
    content = raw.get("content") if isinstance(raw, dict) else None
    return content if isinstance(content, list) else []


def _is_compaction(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == COMPACTION_BLOCK


def last_compaction(messages: Sequence[Any]) -> CompactionMark | None:
    """The last compaction block whose content is a summary (null content is a no-op)."""
    for i in range(len(messages) - 1, -1, -1):
        blocks = _blocks(messages[i])
        for j in range(len(blocks) - 1, -1, -1):
            block = blocks[j]
            if not _is_compaction(block) or block.get("content") is None:
                continue
            content = block["content"]
            if not isinstance(content, str) or not content.strip():
                raise _bad(
                    f"messages[{i}].content[{j}].content",
                    "a compaction block's content must be a summary (a non-empty string) or null",
                )
            encrypted = block.get("encrypted_content")
            signature = block.get("signature")
            return CompactionMark(
                i,
                j,
                content,
                encrypted if isinstance(encrypted, str) else None,
                signature if isinstance(signature, str) else None,
            )
    return None


def has_compaction_blocks(messages: Sequence[Any]) -> bool:
    """True when any message carries a compaction block."""
    return any(_is_compaction(b) for raw in messages for b in _blocks(raw))


def without_compaction_blocks(messages: Sequence[Any]) -> list[Any]:
    """`messages` with every compaction block removed (an upstream that does not implement
    them would refuse them); a message left with no content is dropped."""
    out: list[Any] = []
    for raw in messages:
        blocks = _blocks(raw)
        if not any(_is_compaction(b) for b in blocks):
            out.append(raw)
            continue
        kept = [b for b in blocks if not _is_compaction(b)]
        if kept:
            out.append({**raw, "content": kept})
    return out


def after_compaction(messages: Sequence[Any], mark: CompactionMark) -> list[Any]:
    """What follows the compaction block: the rest of its message, then later messages."""
    raw = messages[mark.message_index]
    rest = _blocks(raw)[mark.block_index + 1 :]
    head = [{**raw, "content": rest}] if rest else []
    return [*head, *messages[mark.message_index + 1 :]]


def compaction_block(
    content: str | None, encrypted_content: str | None, signature: str | None = None
) -> dict[str, Any]:
    """A `compaction` content block as a reply carries it (BetaCompactionBlock)."""
    block = {"type": COMPACTION_BLOCK, "content": content, "encrypted_content": encrypted_content}
    if signature is not None:
        block["signature"] = signature
    return block


# --- thinking --------------------------------------------------------------------


def count_tool_uses(messages: Sequence[Any]) -> int:
    """The tool_use blocks of a history (the `tool_uses` trigger counts these)."""
    return sum(
        1
        for raw in messages
        for block in _blocks(raw)
        if isinstance(block, dict) and block.get("type") == "tool_use"
    )


def clear_thinking(messages: Sequence[Any], keep_turns: int | None) -> tuple[list[Any], int]:
    """Thinking blocks removed from all but the newest `keep_turns` assistant turns that
    have them; returns the history and how many turns lost their thinking. A turn made of
    thinking alone keeps it (an empty assistant message would be refused)."""
    thinking_turns = [
        i
        for i, raw in enumerate(messages)
        if isinstance(raw, dict)
        and raw.get("role") == "assistant"
        and any(_is_thinking(b) for b in _blocks(raw))
    ]
    if keep_turns is None:
        return list(messages), 0
    to_clear = set(thinking_turns[: max(0, len(thinking_turns) - keep_turns)])
    out: list[Any] = []
    cleared = 0
    for i, raw in enumerate(messages):
        if i not in to_clear:
            out.append(raw)
            continue
        rest = [b for b in _blocks(raw) if not _is_thinking(b)]
        if not rest:
            out.append(raw)
            continue
        out.append({**raw, "content": rest})
        cleared += 1
    return out, cleared


def _is_thinking(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in _THINKING_BLOCKS
