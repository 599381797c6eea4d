"""Operator-facing errors of the `compactor` command as one line each (no traceback)."""

from __future__ import annotations

from pydantic import ValidationError
from pydantic_settings import BaseSettings


def describe(exc: BaseException) -> str:
    """One line that says what is wrong and, for settings, which variable to fix."""
    if isinstance(exc, ValidationError):
        return _describe_validation(exc)
    orig = getattr(exc, "orig", None)  # SQLAlchemy's wrapper of the driver's error
    if isinstance(orig, Exception):
        return "database error: " + (str(orig).strip().splitlines() or [type(orig).__name__])[0]
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, (ValueError, OSError, RuntimeError)) or _is_ours(exc):
        return text
    return f"{type(exc).__name__}: {text}"


def _describe_validation(exc: ValidationError) -> str:
    is_settings = _is_settings_title(exc.title)
    parts = []
    for error in exc.errors(include_url=False)[:3]:
        loc = [str(p) for p in error["loc"]]
        where = ".".join(loc)
        if is_settings and loc:
            # The variable, then the table keys inside it: COMPACTOR_MODELS["claude-*"].
            where = "COMPACTOR_" + loc[0].upper() + "".join(f"[{k!r}]" for k in loc[1:])
        # pydantic prefixes a validator's own words; the operator needs only the words.
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    more = len(exc.errors()) - len(parts)
    prefix = "configuration error: " if is_settings else "invalid input: "
    return prefix + "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _is_settings_title(title: str) -> bool:
    from app.settings import Settings

    return title == Settings.__name__ or title == BaseSettings.__name__


def _is_ours(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("app.")
