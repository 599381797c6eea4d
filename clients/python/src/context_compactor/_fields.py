"""Checked reads of JSON answer fields: a missing or mistyped field is an error, not a None."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeVar

from context_compactor._types import FORMATS, Format

L = TypeVar("L", bound=str)


class MalformedAnswerError(ValueError):
    """A field of an answer is missing or has the wrong type."""


def _checked(raw: dict[str, Any], key: str, kind: type) -> Any:
    if key not in raw:
        raise MalformedAnswerError(f"the answer has no {key!r}")
    value = raw[key]
    # bool is an int in Python; a count must not be a flag.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise MalformedAnswerError(f"{key!r} is {type(value).__name__}, not as documented")
    return value


def integer(raw: dict[str, Any], key: str) -> int:
    value: int = _checked(raw, key, int)
    return value


def opt_integer(raw: dict[str, Any], key: str) -> int | None:
    return None if raw.get(key) is None else integer(raw, key)


def integer_or(raw: dict[str, Any], key: str, default: int) -> int:
    return default if raw.get(key) is None else integer(raw, key)


def number(raw: dict[str, Any], key: str) -> float:
    """A JSON number (an integer such as 0 included) as a float."""
    if key not in raw:
        raise MalformedAnswerError(f"the answer has no {key!r}")
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedAnswerError(f"{key!r} is {type(value).__name__}, not as documented")
    return float(value)


def opt_number(raw: dict[str, Any], key: str) -> float | None:
    return None if raw.get(key) is None else number(raw, key)


def opt_ratio(raw: dict[str, Any], key: str) -> float | Literal["off"] | None:
    """A ratio that may also be "off" (a session's prepare_ahead_ratio), or None."""
    return "off" if raw.get(key) == "off" else opt_number(raw, key)


def text(raw: dict[str, Any], key: str) -> str:
    value: str = _checked(raw, key, str)
    return value


def opt_text(raw: dict[str, Any], key: str) -> str | None:
    return None if raw.get(key) is None else text(raw, key)


def flag(raw: dict[str, Any], key: str) -> bool:
    value: bool = _checked(raw, key, bool)
    return value


def flag_or(raw: dict[str, Any], key: str, default: bool) -> bool:
    return default if raw.get(key) is None else flag(raw, key)


def obj(raw: dict[str, Any], key: str) -> dict[str, Any]:
    value: dict[str, Any] = _checked(raw, key, dict)
    return value


def opt_obj(raw: dict[str, Any], key: str) -> dict[str, Any] | None:
    return None if raw.get(key) is None else obj(raw, key)


def array(raw: dict[str, Any], key: str) -> list[Any]:
    value: list[Any] = _checked(raw, key, list)
    return value


def objects(raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
    items = array(raw, key)
    if not all(isinstance(item, dict) for item in items):
        raise MalformedAnswerError(f"{key!r} holds something that is not a JSON object")
    return items


def system(raw: dict[str, Any]) -> str | list[dict[str, Any]] | None:
    value = raw.get("system")
    if value is None or isinstance(value, str | list):
        return value
    raise MalformedAnswerError("'system' is neither text, blocks nor null")


def one_of(raw: dict[str, Any], key: str, allowed: tuple[L, ...]) -> L:
    """A field whose value must be one of the contract's enum values."""
    value = text(raw, key)
    for choice in allowed:
        if value == choice:
            return choice
    raise MalformedAnswerError(f"{key!r} is {value!r}, not one of {', '.join(allowed)}")


def one_of_or(raw: dict[str, Any], key: str, allowed: tuple[L, ...], default: L) -> L:
    return default if raw.get(key) is None else one_of(raw, key, allowed)


def opt_one_of(raw: dict[str, Any], key: str, allowed: tuple[L, ...]) -> L | None:
    return None if raw.get(key) is None else one_of(raw, key, allowed)


def all_of(raw: dict[str, Any], key: str, allowed: tuple[L, ...]) -> list[L]:
    """A list field (absent means empty) whose items are each one of the enum values."""
    return [one_of({key: item}, key, allowed) for item in array_or_empty(raw, key)]


def wire_format(raw: dict[str, Any], key: str = "format") -> Format:
    return one_of(raw, key, FORMATS)


def array_or_empty(raw: dict[str, Any], key: str) -> list[Any]:
    return [] if raw.get(key) is None else array(raw, key)


def objects_or_empty(raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [] if raw.get(key) is None else objects(raw, key)


def texts(raw: dict[str, Any], key: str) -> list[str]:
    """A list of strings (absent means empty)."""
    items = array_or_empty(raw, key)
    if not all(isinstance(item, str) for item in items):
        raise MalformedAnswerError(f"{key!r} holds something that is not text")
    return items


def integers(raw: dict[str, Any], key: str) -> list[int]:
    items = array(raw, key)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in items):
        raise MalformedAnswerError(f"{key!r} holds something that is not a count")
    return items


def timestamp(raw: dict[str, Any], key: str) -> datetime:
    try:
        return datetime.fromisoformat(text(raw, key))
    except ValueError as exc:
        raise MalformedAnswerError(f"{key!r} is not an ISO 8601 time") from exc
