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
_EMPTY = hashlib.sha256(b"").digest()


def canonical_json(value: Any) -> bytes:
    """Key-order independent JSON bytes (the SDKs do not all order fields alike)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return json_bytes(value)


def scope_key(*parts: Any) -> str:
    """The hash of everything besides the prefix that shapes a summary."""
    return hashlib.sha256(canonical_json(list(parts))).hexdigest()


class PrefixHashes:
    """Chained hashes of a history's first k messages, computed only as far as asked."""

    def __init__(self, messages: Sequence[Any]) -> None:
        self._messages = messages
        self._chain = [_EMPTY]

    def __len__(self) -> int:
        return len(self._messages)

    def at(self, k: int) -> str:
        """Hash of `messages[:k]` (0 <= k <= len)."""
        while len(self._chain) <= k:
            message = self._messages[len(self._chain) - 1]
            # SHA-256: stable across processes and replicas, and hardware-accelerated.
            digest = hashlib.sha256(self._chain[-1])
            digest.update(canonical_json(message))
            self._chain.append(digest.digest())
        return self._chain[k].hex()


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
            for entry_id, length, digest in repo.candidates(tenant, scope):
                # A prefix must leave at least one message to keep after the summary.
                if length >= len(prefixes) or prefixes.at(length) != digest:
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
