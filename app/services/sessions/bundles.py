"""Export and import of a session as one JSON Lines bundle (SPEC §17).

Lines, in order: the session; every entry as received (with its usage report and time);
every compaction record; every settings change; last, a trailer with the counts and the
SHA-256 of every byte before it, so a bundle cut anywhere (or edited) is refused.

Both directions stream: the export reads the transcript a page at a time in short
transactions (entries are append-only, so pages up to the entry count read first are a
consistent snapshot); the import writes a batch at a time inside one transaction that
commits only after the trailer checked out, so a refused bundle writes nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.engine.clearing import ClearedToolUse
from app.engine.compaction.strategy import CompactionStep, StrategyName
from app.engine.errors import CompactorError, InvalidHistoryError
from app.engine.thinking import ThinkingLevel
from app.formats.registry import FORMATS
from app.services.json_bytes import json_bytes
from app.services.sessions.indexing import EntryIndexer
from app.services.sessions.revisions import copy_records
from app.services.sessions.transactions import SessionStore
from app.store.mapping import settings_from_json, settings_to_json
from app.store.transactions import StoreTransaction
from app.store.views import (
    CompactionRecord,
    NewSession,
    RestoredFactRecord,
    SessionView,
    SettingsChange,
    StoredEntry,
    SummarizerRecord,
)

BUNDLE_FORMAT = "context-compactor.session"
BUNDLE_VERSION = 1
_PAGE = 500
# One line of a bundle at most (an entry is at most one request body).
MAX_LINE_BYTES = 64 * 1024 * 1024


class InvalidBundleError(CompactorError):
    """The bundle is malformed, truncated or altered; nothing was imported."""


@dataclass(frozen=True, slots=True)
class BundleCounts:
    entries: int
    compactions: int
    changes: int


def _time(moment: datetime) -> str:
    return moment.isoformat()


def _record_line(record: CompactionRecord) -> dict[str, Any]:
    s = record.summarizer
    return {
        "type": "compaction",
        "id": record.id,
        "ordinal": record.ordinal,
        "previous_id": record.previous_id,
        "trigger": record.trigger,
        "summary": record.summary,
        "first_kept_seq": record.first_kept_seq,
        "covered_seq": record.covered_seq,
        "tokens_before": record.tokens_before,
        "tokens_after": record.tokens_after,
        "summarizer": {
            "provider": s.provider,
            "model": s.model,
            "thinking": s.thinking.value,
            "attempts": s.attempts,
        },
        "instructions": record.instructions,
        "strategy": record.strategy.value,
        "applied": [step.value for step in record.applied],
        "restored_facts": [{"kind": f.kind, "text": f.text} for f in record.restored_facts],
        "current_request": record.current_request,
        "cleared_tool_uses": [
            {
                "tool_call_id": c.tool_call_id,
                "tool_name": c.tool_name,
                "placeholder": c.placeholder,
                "input_placeholder": c.input_placeholder,
                "tokens_saved": c.tokens_saved,
            }
            for c in record.cleared_tool_uses
        ],
        "reverted_id": record.reverted_id,
        "created_at": _time(record.created_at),
    }


def _session_line(session: SessionView) -> dict[str, Any]:
    return {
        "type": "session",
        "format_name": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "id": session.id,
        "model": session.model,
        "format": session.format,
        "system": session.system,
        "tools": session.tools,
        "settings": settings_to_json(session.settings),
        "metadata": session.metadata,
        "entry_count": session.entry_count,
        "system_prefix_count": session.system_prefix_count,
        "created_at": _time(session.created_at),
    }


class SessionBundles:
    def __init__(self, store: SessionStore) -> None:
        self._store = store

    def export(self, tenant: str, session_id: str) -> Iterator[bytes]:
        """The bundle's lines; the session is looked up before the first line is made
        (a missing one raises here, not halfway through a stream)."""
        with self._store.transaction() as tx:
            session = self._store.require(tx, tenant, session_id)
            records = tx.compactions.all(session_id)
            changes = tx.changes.all(session_id)
        return self._lines(session, records, changes)

    def _lines(
        self, session: SessionView, records: list[CompactionRecord], changes: list[SettingsChange]
    ) -> Iterator[bytes]:
        digest = hashlib.sha256()

        def line(value: Any) -> bytes:
            data = json_bytes(value) + b"\n"
            digest.update(data)
            return data

        yield line(_session_line(session))
        after, count = -1, session.entry_count
        written = 0
        while after < count - 1:
            with self._store.transaction() as tx:
                page = tx.transcript.stored(session.id, after, count, _PAGE)
            if not page:
                break
            for entry in page:
                written += 1
                yield line(
                    {
                        "type": "entry",
                        "seq": entry.seq,
                        "message": entry.message,
                        "usage": dict(entry.usage) if entry.usage else None,
                        "created_at": _time(entry.created_at),
                    }
                )
            after = page[-1].seq
        for record in records:
            yield line(_record_line(record))
        for change in changes:
            yield line(
                {
                    "type": "change",
                    "changed_by": change.changed_by,
                    "via": change.via,
                    "changes": change.changes,
                    "created_at": _time(change.created_at),
                }
            )
        trailer = {
            "type": "trailer",
            "entries": written,
            "compactions": len(records),
            "changes": len(changes),
            "sha256": digest.hexdigest(),
        }
        yield json_bytes(trailer) + b"\n"

    def import_bundle(self, tenant: str, lines: Iterable[bytes]) -> SessionView:
        """A new session of `tenant` restored from a bundle's lines; InvalidBundleError
        (and nothing written) unless the whole bundle is there and checks out."""
        with self._store.transaction() as tx:
            return _Importer(tx, tenant).run(iter(lines))


class _Importer:
    def __init__(self, tx: StoreTransaction, tenant: str) -> None:
        self.tx = tx
        self.tenant = tenant
        self.digest = hashlib.sha256()
        self.number = 0

    def _next(self, lines: Iterator[bytes]) -> tuple[bytes, dict[str, Any]] | None:
        for raw in lines:
            self.number += 1
            if not raw.strip():
                raise self.error("is empty (a bundle has no blank lines)")
            if len(raw) > MAX_LINE_BYTES:
                raise self.error(f"is longer than {MAX_LINE_BYTES} bytes")
            try:
                value = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                raise self.error(f"is not JSON ({exc})") from None
            if not isinstance(value, dict) or not isinstance(value.get("type"), str):
                raise self.error('is not an object with a "type"')
            return raw, value
        return None

    def error(self, what: str) -> InvalidBundleError:
        return InvalidBundleError(f"bundle line {self.number} {what}; nothing was imported")

    def run(self, lines: Iterator[bytes]) -> SessionView:
        first = self._next(lines)
        if first is None:
            raise InvalidBundleError("the bundle is empty; nothing was imported")
        raw, head = first
        if head["type"] != "session" or head.get("format_name") != BUNDLE_FORMAT:
            raise self.error(f"is not a session line of a {BUNDLE_FORMAT} bundle")
        if head.get("version") != BUNDLE_VERSION:
            raise self.error(
                f"has version {head.get('version')!r}; this service reads {BUNDLE_VERSION}"
            )
        self.digest.update(raw)
        session = self._session(head)
        parser = FORMATS.get(session.format) if session.format else FORMATS.default
        indexer = EntryIndexer(parser)
        entries = 0
        records: list[CompactionRecord] = []
        changes: list[SettingsChange] = []
        batch: list[StoredEntry] = []
        while True:
            item = self._next(lines)
            if item is None:
                raise InvalidBundleError(
                    f"the bundle ends after line {self.number} without its trailer: it was "
                    "cut short; nothing was imported"
                )
            raw, value = item
            kind = value["type"]
            if kind == "trailer":
                break
            self.digest.update(raw)
            if kind == "entry":
                if records or changes:
                    raise self.error("is an entry after the compaction records")
                batch.append(self._entry(value, entries, parser))
                entries += 1
                if len(batch) >= _PAGE:
                    self._write(session.id, batch, indexer, parser)
                    batch = []
            elif kind == "compaction":
                records.append(self._record(value, session.id, entries))
            elif kind == "change":
                changes.append(self._change(value))
            else:
                raise self.error(f"has an unknown type {kind!r}")
        self._write(session.id, batch, indexer, parser)
        self._trailer(value, BundleCounts(entries, len(records), len(changes)))
        if self._next(lines) is not None:
            raise self.error("follows the trailer (the trailer is the last line)")
        expected = head.get("entry_count")
        if expected != entries:
            raise InvalidBundleError(
                f"the session line says {expected} entries, the bundle holds {entries}; "
                "nothing was imported"
            )
        prefix = head.get("system_prefix_count", 0)
        if not isinstance(prefix, int) or not 0 <= prefix <= entries:
            raise InvalidBundleError("system_prefix_count is not between 0 and the entry count")
        _check_chain(records)
        copy_records(self.tx, session.id, records)
        for change in changes:
            self.tx.changes.add(session.id, change)
        self.tx.sessions.set_counters(
            session.id,
            entry_count=entries,
            system_prefix_count=prefix,
            compaction_count=len(records),
            created_at=_parse_time(head.get("created_at"), "the session's created_at"),
        )
        restored = self.tx.sessions.get(session.id, self.tenant)
        assert restored is not None
        return restored

    def _session(self, head: Mapping[str, Any]) -> SessionView:
        fmt = head.get("format")
        if fmt is not None and fmt not in FORMATS.names:
            raise self.error(f"names an unknown format {fmt!r}")
        tools, metadata, settings = (
            head.get("tools") or [],
            head.get("metadata") or {},
            head.get("settings") or {},
        )
        if (
            not isinstance(tools, list)
            or not isinstance(metadata, dict)
            or not isinstance(settings, dict)
        ):
            raise self.error("has tools, metadata or settings of the wrong type")
        try:
            parsed_settings = settings_from_json(settings)
        except (ValueError, TypeError, KeyError) as exc:
            raise self.error(f"has settings this service cannot read ({exc})") from None
        model = head.get("model")
        if model is not None and not isinstance(model, str):
            raise self.error("has a model that is not a string")
        return self.tx.sessions.add(
            self.tenant,
            NewSession(
                model=model,
                format=fmt,
                system=head.get("system"),
                tools=tools,
                settings=parsed_settings,
                metadata=metadata,
            ),
        )

    def _entry(self, value: Mapping[str, Any], expected_seq: int, parser: Any) -> StoredEntry:
        if value.get("seq") != expected_seq:
            raise self.error(f"is entry seq {value.get('seq')!r}, expected {expected_seq}")
        message, usage = value.get("message"), value.get("usage")
        if not isinstance(message, dict):
            raise self.error("has an entry whose message is not an object")
        try:
            parser.parse_message(message, f"entry {expected_seq}")
        except InvalidHistoryError as exc:
            raise self.error(f"holds a message this session's format refuses: {exc}") from None
        if usage is not None and (
            not isinstance(usage, dict)
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in usage.values())
        ):
            raise self.error("has a usage report that is not a map of integers")
        created = _parse_time(value.get("created_at"), f"entry {expected_seq}'s created_at")
        return StoredEntry(expected_seq, message, usage or None, None, created)

    def _write(
        self, session_id: str, batch: list[StoredEntry], indexer: EntryIndexer, parser: Any
    ) -> None:
        if not batch:
            return
        messages = [e.message for e in batch]
        texts = indexer.texts(messages, [parser.parse_message(m, "entry") for m in messages])
        self.tx.transcript.restore(
            session_id,
            [
                StoredEntry(e.seq, e.message, e.usage, text, e.created_at)
                for e, text in zip(batch, texts, strict=True)
            ],
        )

    def _record(self, value: Mapping[str, Any], session_id: str, entries: int) -> CompactionRecord:
        try:
            s = value["summarizer"]
            record = CompactionRecord(
                id=str(value["id"]),
                created_at=_parse_time(value.get("created_at"), "a record's created_at"),
                session_id=session_id,
                ordinal=_int(value["ordinal"]),
                previous_id=value.get("previous_id"),
                trigger=str(value["trigger"]),
                summary=str(value["summary"]),
                first_kept_seq=_int(value["first_kept_seq"]),
                covered_seq=_int(value["covered_seq"]),
                tokens_before=_int(value["tokens_before"]),
                tokens_after=_int(value["tokens_after"]),
                summarizer=SummarizerRecord(
                    provider=str(s["provider"]),
                    model=str(s["model"]),
                    thinking=ThinkingLevel(s["thinking"]),
                    attempts=_int(s["attempts"]),
                ),
                instructions=value.get("instructions"),
                strategy=StrategyName(value["strategy"]),
                applied=tuple(CompactionStep(step) for step in value.get("applied") or ()),
                restored_facts=tuple(
                    RestoredFactRecord(str(f["kind"]), str(f["text"]))
                    for f in value.get("restored_facts") or ()
                ),
                current_request=value.get("current_request"),
                cleared_tool_uses=tuple(
                    ClearedToolUse(
                        tool_call_id=str(c["tool_call_id"]),
                        tool_name=str(c["tool_name"]),
                        placeholder=str(c["placeholder"]),
                        input_placeholder=c.get("input_placeholder"),
                        tokens_saved=_int(c["tokens_saved"]),
                    )
                    for c in value.get("cleared_tool_uses") or ()
                ),
                reverted_id=value.get("reverted_id"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise self.error(f"is a compaction record this service cannot read ({exc!r})") from None
        if not 0 <= record.first_kept_seq <= record.covered_seq <= entries:
            raise self.error("is a compaction record whose entries are not in the bundle")
        return record

    def _change(self, value: Mapping[str, Any]) -> SettingsChange:
        changes = value.get("changes")
        if not isinstance(changes, dict) or not isinstance(value.get("changed_by"), str):
            raise self.error("is a settings change without changed_by and changes")
        return SettingsChange(
            str(value["changed_by"]),
            str(value.get("via", "api")),
            changes,
            _parse_time(value.get("created_at"), "a change's created_at"),
        )

    def _trailer(self, value: Mapping[str, Any], counts: BundleCounts) -> None:
        if value.get("sha256") != self.digest.hexdigest():
            raise self.error(
                "is a trailer whose checksum does not match the lines before it: the "
                "bundle was altered or lines are missing"
            )
        said = (value.get("entries"), value.get("compactions"), value.get("changes"))
        if said != (counts.entries, counts.compactions, counts.changes):
            raise self.error(f"is a trailer counting {said}, the bundle holds {counts}")


def _check_chain(records: list[CompactionRecord]) -> None:
    seen: set[str] = set()
    for index, record in enumerate(records, start=1):
        if record.ordinal != index:
            raise InvalidBundleError(
                f"compaction records are not numbered 1..{len(records)} in order; "
                "nothing was imported"
            )
        for link in (record.previous_id, record.reverted_id):
            if link is not None and link not in seen:
                raise InvalidBundleError(
                    f"compaction {record.id} links to {link}, which is not an earlier record "
                    "of the bundle; nothing was imported"
                )
        seen.add(record.id)


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{value!r} is not an integer")
    return value


def _parse_time(value: Any, what: str) -> datetime:
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        raise InvalidBundleError(f"{what} is not an ISO time; nothing was imported") from None
    if moment.tzinfo is None:
        raise InvalidBundleError(f"{what} has no time zone; nothing was imported")
    return moment
