"""The proxy's summary cache (SPEC §10): a stateless caller resends its whole history
every turn, so the summary of a prefix it already had summarized is looked up instead of
written again — one summarizer call per compaction, not per turn.

An entry is keyed by its tenant, a scope (format, system prompt, inline system
messages, tools, summarizer: what else shapes a summary) and a chained hash of the exact
summarized messages. A lookup only hashes as far as the longest stored prefix of the
scope, and nothing at all when the scope has no entries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from app.services.json_bytes import json_bytes
from app.store.models import SummaryCacheRow
from app.store.repositories import SummaryCacheRepository

T = TypeVar("T")


def canonical_json(value: Any) -> bytes:
    """Key-order independent JSON bytes (the SDKs do not all order fields alike)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return json_bytes(value)


def scope_key(*parts: Any) -> str:
    """The hash of everything besides the prefix that shapes a summary."""
    return hashlib.sha256(canonical_json(list(parts))).hexdigest()


# What an entry holds in place of a summary message when summarizing its prefix did not
# shrink the history (IneffectiveCompactionError): the next request with the same prefix
# to summarize skips the summarizer instead of paying for the same refusal again.
INEFFECTIVE_MARKER: dict[str, Any] = {"compactor": "ineffective-summary"}


def ineffective_scope(scope: str) -> str:
    """The scope of the ineffective-summary entries of `scope`: kept apart, so a summary
    lookup never finds one."""
    return scope_key(scope, "ineffective")


class PrefixHashes:
    """SHA-256 of a history's first k messages (their canonical JSON, one per line), in
    one running pass that goes only as far as asked; stable across processes, so every
    replica computes the same keys."""

    def __init__(self, messages: Sequence[Any]) -> None:
        self._messages = messages
        self._running = hashlib.sha256()
        self._done = 0
        self._digests: dict[int, str] = {0: hashlib.sha256().hexdigest()}

    def __len__(self) -> int:
        return len(self._messages)

    def at(self, k: int) -> str:
        """Hash of `messages[:k]` (0 <= k <= len)."""
        found = self._digests.get(k)
        if found is not None:
            return found
        if k < self._done:
            # Asked out of order: hash that prefix on its own (same definition).
            return PrefixHashes(self._messages).at(k)
        while self._done < k:
            # Canonical JSON has no raw newline, so the line breaks keep messages apart.
            self._running.update(canonical_json(self._messages[self._done]))
            self._running.update(b"\n")
            self._done += 1
        digest = self._running.copy().hexdigest()
        self._digests[k] = digest
        return digest

    def many(self, lengths: Sequence[int]) -> dict[int, str]:
        """Hashes at each of `lengths`, in one pass."""
        return {k: self.at(k) for k in sorted(set(lengths))}


@dataclass(frozen=True, slots=True)
class CachedSummary:
    """A stored summary of the first `prefix_len` messages (after the inline system)."""

    prefix_len: int
    prefix_tokens: int
    summary_message: Any


class SummaryCache:
    """Tenant-scoped, bounded summaries in the store, shared by every replica."""

    def __init__(self, sessions: sessionmaker[Session], max_entries_per_tenant: int) -> None:
        self._sessions = sessions
        self.max_entries = max_entries_per_tenant

    @contextmanager
    def _transaction(self) -> Iterator[Session]:
        with self._sessions() as db, db.begin():
            yield db

    def longest(self, tenant: str, scope: str, prefixes: PrefixHashes) -> CachedSummary | None:
        """The entry with the longest prefix this history starts with, if any."""
        with self._transaction() as db:
            repo = SummaryCacheRepository(db)
            # A prefix must leave at least one message to keep after the summary.
            candidates = [c for c in repo.candidates(tenant, scope) if c[1] < len(prefixes)]
            hashes = prefixes.many([length for _, length, _ in candidates])
            for entry_id, length, digest in candidates:
                if hashes[length] != digest:
                    continue
                row = repo.get(entry_id)
                if row is not None:
                    return CachedSummary(row.prefix_len, row.prefix_tokens, row.summary_message)
        return None

    def store(
        self,
        tenant: str,
        scope: str,
        prefixes: PrefixHashes,
        summary: CachedSummary,
    ) -> None:
        """Stores a summary; a concurrent request that stored the same one first wins."""
        row = SummaryCacheRow(
            tenant=tenant,
            scope_key=scope,
            prefix_len=summary.prefix_len,
            prefix_hash=prefixes.at(summary.prefix_len),
            prefix_tokens=summary.prefix_tokens,
            summary_message=summary.summary_message,
        )
        try:
            with self._transaction() as db:
                SummaryCacheRepository(db).add(row, self.max_entries)
        except IntegrityError:
            return


def ignoring_store_errors(work: Callable[[], T], on_error: Callable[[str], None]) -> T | None:
    """A cache that cannot be reached is a miss, never a failed request."""
    try:
        return work()
    except SQLAlchemyError as exc:
        on_error(type(exc).__name__)
        return None
