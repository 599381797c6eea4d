"""OpenAI Responses `context_management` and compaction items (SPEC §11).

The shapes are the `openai` SDK's types: `response_create_params.ContextManagement`
(`{type: "compaction", compact_threshold}`), `ResponseCompactionItem(Param)`,
`CompactedResponse` and `InputTokenCountResponse`. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from app.engine.errors import InvalidContextManagementError
from app.engine.native_edits import CompactionEntry
from app.formats.common import fail, type_name

COMPACTION_ITEM = "compaction"
TRIGGER_ITEM = "compaction_trigger"
ENTRY_TYPES = ("compaction",)


def _bad(where: str, problem: str) -> InvalidContextManagementError:
    return InvalidContextManagementError(f"{where}: {problem}", where=where)


def parse_context_management(value: Any) -> CompactionEntry | None:
    """The compaction entry of a request's `context_management`, if it has one."""
    where = "context_management"
    if value is None:
        return None
    if not isinstance(value, list):
        raise _bad(where, f"must be an array of entries, got {type_name(value)}")
    found: CompactionEntry | None = None
    for i, entry in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(entry, dict):
            raise _bad(at, f"each entry must be an object, got {type_name(entry)}")
        if entry.get("type") not in ENTRY_TYPES:
            raise _bad(
                f"{at}.type",
                f"unknown context management type {entry.get('type')!r}; the service "
                f"honours {', '.join(ENTRY_TYPES)}",
            )
        unknown = sorted(set(entry) - {"type", "compact_threshold"})
        if unknown:
            raise _bad(at, f"unknown field {unknown[0]!r}; use type and compact_threshold")
        threshold = entry.get("compact_threshold")
        if threshold is not None and (
            not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 1
        ):
            raise _bad(f"{at}.compact_threshold", f"must be a positive integer, got {threshold!r}")
        found = CompactionEntry(threshold)
    return found


def input_items(value: Any) -> list[Any]:
    """`input` as a list of items (a string is one user message)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if isinstance(value, list):
        return value
    raise fail("input", f"must be a string or an array of items, got {type_name(value)}")


def last_compaction_index(
    items: Sequence[Any], accept: Callable[[dict[str, Any]], bool] = lambda item: True
) -> int | None:
    """Where the last compaction item (that `accept` takes) is."""
    for i in range(len(items) - 1, -1, -1):
        item = items[i]
        if isinstance(item, dict) and item.get("type") == COMPACTION_ITEM and accept(item):
            return i
    return None


def leading_system_items(items: Sequence[Any]) -> list[Any]:
    """The leading system/developer message items of `items`."""
    lead: list[Any] = []
    for item in items:
        if not isinstance(item, dict) or item.get("type", "message") != "message":
            break
        if item.get("role") not in ("system", "developer"):
            break
        lead.append(item)
    return lead


def compaction_item(item_id: str, encrypted_content: str) -> dict[str, Any]:
    """A `compaction` output item (ResponseCompactionItem)."""
    return {"id": item_id, "type": COMPACTION_ITEM, "encrypted_content": encrypted_content}


def user_messages(items: Sequence[Any]) -> list[Any]:
    """The user messages of `items` as output items, in order."""
    out = []
    for item in items:
        if (
            isinstance(item, dict)
            and item.get("role") == "user"
            and item.get("type", "message") == "message"
        ):
            out.append({"type": "message", **item})
    return out


def usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """A ResponseUsage object."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def compaction_trigger(items: Sequence[Any]) -> bool:
    """True when `input` ends with a `compaction_trigger` item (CompactionTrigger: "must
    be the final input item"); one anywhere else is refused."""
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("type") == TRIGGER_ITEM and i != len(items) - 1:
            raise _bad(
                f"input[{i}]",
                "a compaction_trigger item must be the last item of input; move it to the end",
            )
    last = items[-1] if items else None
    return isinstance(last, dict) and last.get("type") == TRIGGER_ITEM
