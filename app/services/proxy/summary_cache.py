"""The proxy's summary cache (SPEC §10): a stateless caller resends its whole history
every turn, so the summary of a prefix it already had summarized is looked up instead of
written again — one summarizer call per compaction, not per turn.

An entry is keyed by its tenant, a scope (format, system prompt, inline system
messages, tools, summarizer: what else shapes a summary) and a chained hash of the exact
summarized messages. A lookup only hashes as far as the longest stored prefix of the
scope, and nothing at all when the scope has no entries.

Where entries are kept is a port (`app.services.ports.SummaryStore`; the SQL adapter is
`app.store.summaries.SqlSummaryStore`); the matching here is the same for every backend.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from contextlib import suppress
from typing import Any, Generic, TypeVar

import orjson

from app.services.json_bytes import json_bytes
from app.services.ports import SummaryStore
from app.store.errors import StoreError
from app.store.views import CachedSummary, StoredPrefix

__all__ = [
    "INEFFECTIVE_MARKER",
    "CachedSummary",
    "PrefixHashes",
    "PrefixMemo",
    "SummaryCache",
    "ignoring_store_errors",
    "ineffective_scope",
    "scope_key",
]

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


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Lru(Generic[K, V]):
    """A small thread-safe LRU (lookups run in worker threads)."""

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._data.get(key)
            if found is not None:
                self._data.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = value
            if len(self._data) > self._max:
                self._data.popitem(last=False)


class PrefixMemo(_Lru[tuple[int, int], str]):
    """Prefix hashes already computed in this process, keyed by an in-process fingerprint
    of the prefix (the per-message digests the count already made): a caller resending its
    history every turn has the same prefix hashed once, not on every request."""

    def __init__(self, max_entries: int = 1024) -> None:
        super().__init__(max_entries)


class PrefixHashes:
    """SHA-256 of a history's first k messages (their canonical JSON, one per line), in
    one running pass that goes only as far as asked; stable across processes, so every
    replica computes the same keys.

    With `fingerprints` (an in-process digest of each message, e.g. length and SipHash of
    its JSON) and a `memo`, a prefix hashed before is looked up instead: the key is the
    prefix length and the hash of its messages' fingerprints, as likely to collide as the
    per-message count cache's keys (about 2^-64 per pair)."""

    def __init__(
        self,
        messages: Sequence[Any],
        fingerprints: Sequence[Hashable] | None = None,
        memo: PrefixMemo | None = None,
    ) -> None:
        self._messages = messages
        self._fingerprints = fingerprints if memo is not None else None
        if self._fingerprints is not None and len(self._fingerprints) != len(messages):
            self._fingerprints = None
        self._memo = memo
        self._running = hashlib.sha256()
        self._done = 0
        self._digests: dict[int, str] = {0: hashlib.sha256().hexdigest()}

    def __len__(self) -> int:
        return len(self._messages)

    def at(self, k: int) -> str:
        """Hash of `messages[:k]` (0 <= k <= len)."""
        found = self.memoized(k)
        if found is not None:
            return found
        digest = self._computed(k)
        self._digests[k] = digest
        memo_key = self._memo_key(k)
        if memo_key is not None and self._memo is not None:
            self._memo.put(memo_key, digest)
        return digest

    def memoized(self, k: int) -> str | None:
        """Hash of `messages[:k]` when already known (here or in the memo), else None."""
        found = self._digests.get(k)
        if found is not None:
            return found
        memo_key = self._memo_key(k)
        if memo_key is None or self._memo is None:
            return None
        found = self._memo.get(memo_key)
        if found is not None:
            self._digests[k] = found
        return found

    def _memo_key(self, k: int) -> tuple[int, int] | None:
        if self._fingerprints is None or not 0 <= k <= len(self._fingerprints):
            return None
        return k, hash(tuple(self._fingerprints[:k]))

    def _computed(self, k: int) -> str:
        if k < self._done:
            # Asked out of order: hash that prefix on its own (same definition).
            return PrefixHashes(self._messages).at(k)
        while self._done < k:
            # Canonical JSON has no raw newline, so the line breaks keep messages apart.
            self._running.update(canonical_json(self._messages[self._done]))
            self._running.update(b"\n")
            self._done += 1
        return self._running.copy().hexdigest()

    def many(self, lengths: Sequence[int]) -> dict[int, str]:
        """Hashes at each of `lengths`, in one pass."""
        return {k: self.at(k) for k in sorted(set(lengths))}


class SummaryCache:
    """Tenant-scoped, bounded summaries in a shared store, matched against histories."""

    def __init__(self, store: SummaryStore) -> None:
        self._store = store
        # Entries already read, by entry and key: a stored entry never changes, so a
        # candidate the lookup finds again is not read again (one listing per lookup).
        # The summary is kept as JSON bytes: each hit gets its own copy to put in a body.
        self._read: _Lru[tuple[str, str, str, int, str], tuple[int, int, bytes]] = _Lru(1024)

    def longest(self, tenant: str, scope: str, prefixes: PrefixHashes) -> CachedSummary | None:
        """The entry with the longest prefix this history starts with, if any."""
        # A prefix must leave at least one message to keep after the summary.
        candidates = [
            c for c in self._store.candidates(tenant, scope) if c.prefix_len < len(prefixes)
        ]
        # Longest first while the prefix hashes are known without hashing (the usual
        # next turn): the first match is the longest; the first unknown one stops it.
        for candidate in candidates:
            known = prefixes.memoized(candidate.prefix_len)
            if known is None:
                break
            if known == candidate.prefix_hash:
                found = self._summary(tenant, scope, candidate)
                if found is not None:
                    return found
        hashes = prefixes.many([c.prefix_len for c in candidates])
        for candidate in candidates:
            if hashes[candidate.prefix_len] != candidate.prefix_hash:
                continue
            found = self._summary(tenant, scope, candidate)
            if found is not None:
                return found
        return None

    def _summary(self, tenant: str, scope: str, entry: StoredPrefix) -> CachedSummary | None:
        key = (entry.entry, tenant, scope, entry.prefix_len, entry.prefix_hash)
        known = self._read.get(key)
        if known is not None:
            prefix_len, prefix_tokens, message = known
            return CachedSummary(prefix_len, prefix_tokens, orjson.loads(message))
        found = self._store.summary(entry)
        if found is None:
            return None
        # Not representable for orjson (e.g. an integer beyond 64 bits): read each time.
        with suppress(TypeError):
            encoded = orjson.dumps(found.summary_message)
            self._read.put(key, (found.prefix_len, found.prefix_tokens, encoded))
        return found

    def store(
        self,
        tenant: str,
        scope: str,
        prefixes: PrefixHashes,
        summary: CachedSummary,
    ) -> None:
        """Stores a summary; a concurrent request that stored the same one first wins."""
        self._store.add(tenant, scope, prefixes.at(summary.prefix_len), summary)


def ignoring_store_errors(work: Callable[[], T], on_error: Callable[[str], None]) -> T | None:
    """A cache that cannot be reached is a miss, never a failed request."""
    try:
        return work()
    except StoreError as exc:
        on_error(type(exc.__cause__ or exc).__name__)
        return None
