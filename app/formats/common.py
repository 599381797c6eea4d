"""Helpers shared by the format parsers."""

from __future__ import annotations

import json
from typing import Any

from app.engine.counting.images import image_size_from_base64
from app.engine.errors import InvalidHistoryError
from app.engine.messages import Block, BlockKind, ImageInfo


def fail(where: str, problem: str) -> InvalidHistoryError:
    return InvalidHistoryError(f"{where}: {problem}", where=where)


def expect_str(value: Any, where: str, *, optional: bool = False) -> str:
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        raise fail(where, f"must be a string, got {type_name(value)}")
    return value


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "number" if isinstance(value, int | float) else type(value).__name__
    )


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def other_block(value: Any) -> Block:
    """A block we do not interpret: carried as-is, counted by its JSON text."""
    return Block(kind=BlockKind.OTHER, text=compact_json(value))


def image_block(data: str | None, detail: str | None = None) -> Block:
    """An image; its pixel size is read when base64 data is present."""
    size = image_size_from_base64(data) if data else None
    info = (
        ImageInfo(width=size[0], height=size[1], detail=detail)
        if size
        else ImageInfo(detail=detail)
    )
    return Block(kind=BlockKind.IMAGE, image=info)


def is_one_of(value: Any, names: frozenset[str]) -> bool:
    """`value in names` for unvalidated input: a list or an object is never a member (and
    must not raise TypeError as an unhashable set key)."""
    return isinstance(value, str) and value in names
