"""Changing a session's settings (PATCH /sessions/{id}): the next `prepare` uses them,
and each change is recorded with who made it and when (shown by the inspector)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from app.services.sessions.transactions import SessionStore
from app.store.views import SessionSettings, SessionView, SettingsChange

# What a PATCH may change: the model, and these fields of the settings.
SETTINGS_FIELDS = (
    "context_window",
    "reserve_tokens",
    "trigger_tokens",
    "keep_recent_tokens",
    "strategy",
    "thinking",
    "prepare_ahead_ratio",
)
CHANGEABLE = ("model", *SETTINGS_FIELDS)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


class SessionSettingsEditor:
    def __init__(self, store: SessionStore, clock: Callable[[], datetime] = _utcnow) -> None:
        self._store = store
        self._clock = clock

    def update(
        self,
        tenant: str,
        session_id: str,
        values: Mapping[str, Any],
        changed_by: str,
        via: str = "api",
    ) -> SessionView:
        """Sets the given fields (None: back to the service default); records what
        changed. Automatic compaction paused by a stall may run again."""
        unknown = set(values) - set(CHANGEABLE)
        if unknown:
            raise ValueError(f"not changeable: {sorted(unknown)}")
        with self._store.transaction() as tx:
            session = tx.sessions.lock(session_id, tenant)
            if session is None:
                session = self._store.require(tx, tenant, session_id)
            settings_values = {k: v for k, v in values.items() if k in SETTINGS_FIELDS}
            settings: SessionSettings = replace(session.settings, **settings_values)
            model = values.get("model", session.model)
            changes = {
                name: {"before": _plain(old), "after": _plain(new)}
                for name, old, new in (
                    ("model", session.model, model),
                    *(
                        (f, getattr(session.settings, f), getattr(settings, f))
                        for f in SETTINGS_FIELDS
                    ),
                )
                if old != new
            }
            if not changes:
                return session
            tx.sessions.set_settings(session_id, model, settings)
            tx.sessions.set_stall(session_id, None)
            tx.changes.add(session_id, SettingsChange(changed_by, via, changes, self._clock()))
            updated = tx.sessions.get(session_id, tenant)
            assert updated is not None
            return updated

    def changes(self, tenant: str, session_id: str) -> list[SettingsChange]:
        """Every recorded settings change of the session, oldest first."""
        with self._store.transaction() as tx:
            self._store.require(tx, tenant, session_id)
            return tx.changes.all(session_id)
