"""The frozen views of sessions the session use cases hand out (never ORM rows or JSON
columns): defined by the store (`app.store.views`, mapped there from its rows once) and
handed on from here to the layers above, which never import the store."""

from __future__ import annotations

from app.store.views import (
    CompactionJobView,
    CompactionRecord,
    CompactionStall,
    JobFailure,
    JobRequest,
    NewSession,
    RestoredFactRecord,
    SessionSettings,
    SessionView,
    SettingsChange,
    SummarizerRecord,
    TranscriptEntry,
)

__all__ = [
    "CompactionJobView",
    "CompactionRecord",
    "CompactionStall",
    "JobFailure",
    "JobRequest",
    "NewSession",
    "RestoredFactRecord",
    "SessionSettings",
    "SessionView",
    "SettingsChange",
    "SummarizerRecord",
    "TranscriptEntry",
]
