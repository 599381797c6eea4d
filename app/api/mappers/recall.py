"""Mappers of the search, settings-change and bundle bodies."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from app.api.mappers.strategy import strategy_name
from app.api.schemas.recall import (
    SearchHitOut,
    SearchOut,
    SessionPatchIn,
    SettingsChangeListOut,
    SettingsChangeOut,
)
from app.services.sessions.search import SearchResult
from app.services.sessions.views import SettingsChange


def search_out(query: str, result: SearchResult) -> SearchOut:
    return SearchOut(
        query=query,
        match=result.match.value,
        hits=[SearchHitOut(**asdict(h)) for h in result.hits],
    )


def settings_values(body: SessionPatchIn) -> dict[str, Any]:
    """The fields the PATCH body gave (null included: back to the default)."""
    values: dict[str, Any] = {name: getattr(body, name) for name in body.model_fields_set}
    if "strategy" in values:
        values["strategy"] = strategy_name(values["strategy"])
    return values


def changes_out(changes: list[SettingsChange]) -> SettingsChangeListOut:
    return SettingsChangeListOut(
        changes=[
            SettingsChangeOut(
                changed_by=c.changed_by,
                via=c.via,
                changes={k: dict(v) for k, v in c.changes.items()},
                created_at=c.created_at,
            )
            for c in changes
        ]
    )
