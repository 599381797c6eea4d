"""What the proxy remembers of bodies it saw, so a body resent byte for byte (a stateless
caller's retry, a client resending its last request) is not parsed, counted or compacted
again: bodies known to be under their threshold, and the body forwarded for a compacted
one. Both are keyed by the exact bytes; the compacted memo is bounded by bytes held, not
entries, since each entry is a whole (compacted) history."""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

UNDER_THRESHOLD_ENTRIES = 4096
# At most this many compacted bodies, and at most this many bytes of them, per process.
COMPACTED_RESEND_ENTRIES = 32
COMPACTED_RESEND_BYTES = 64 * 1024 * 1024


def body_key(api: str, raw: bytes) -> tuple[str, int, int]:
    # Length plus SipHash, like the per-message count cache: keys never leave the process.
    return api, len(raw), hash(raw)


@dataclass(frozen=True, slots=True)
class CompactedResend:
    body: dict[str, Any]
    tokens_before: int
    tokens_after: int
    size: int


class ResendMemos:
    """Per-process memos of bodies seen (thread-safe: lookups run in worker threads)."""

    def __init__(
        self,
        under_entries: int = UNDER_THRESHOLD_ENTRIES,
        compacted_entries: int = COMPACTED_RESEND_ENTRIES,
        compacted_bytes: int = COMPACTED_RESEND_BYTES,
    ) -> None:
        self._lock = threading.Lock()
        self._under: OrderedDict[tuple[str, int, int], int] = OrderedDict()
        # How many remembered bodies have each (api, length): a body of a length never
        # seen (a history that grew) is told apart without hashing its bytes.
        self._under_lengths: Counter[tuple[str, int]] = Counter()
        self._under_max = under_entries
        self._compacted: OrderedDict[tuple[str, str, int, int], CompactedResend] = OrderedDict()
        self._compacted_max = compacted_entries
        self._compacted_max_bytes = compacted_bytes
        self._compacted_bytes = 0

    def under_threshold(self, api: str, raw: bytes) -> int | None:
        """The token count of a body already seen, byte for byte, under its threshold."""
        with self._lock:
            if (api, len(raw)) not in self._under_lengths:
                return None
            key = body_key(api, raw)
            tokens = self._under.get(key)
            if tokens is not None:
                self._under.move_to_end(key)
            return tokens

    def remember_under_threshold(self, api: str, raw: bytes, tokens: int) -> None:
        key = body_key(api, raw)
        with self._lock:
            if key not in self._under:
                self._under_lengths[key[:2]] += 1
            self._under[key] = tokens
            while len(self._under) > self._under_max:
                evicted, _ = self._under.popitem(last=False)
                self._under_lengths[evicted[:2]] -= 1
                if self._under_lengths[evicted[:2]] <= 0:
                    del self._under_lengths[evicted[:2]]

    def compacted(self, tenant: str, api: str, raw: bytes) -> CompactedResend | None:
        """What was forwarded last time for this very body (same tenant, same bytes)."""
        key = (tenant, *body_key(api, raw))
        with self._lock:
            known = self._compacted.get(key)
            if known is not None:
                self._compacted.move_to_end(key)
            return known

    def remember_compacted(
        self,
        tenant: str,
        api: str,
        raw: bytes,
        body: dict[str, Any],
        tokens: tuple[int, int],
    ) -> None:
        try:
            size = len(orjson.dumps(body))
        except TypeError:
            return
        if size > self._compacted_max_bytes:
            return
        key = (tenant, *body_key(api, raw))
        entry = CompactedResend(body, tokens[0], tokens[1], size)
        with self._lock:
            previous = self._compacted.pop(key, None)
            if previous is not None:
                self._compacted_bytes -= previous.size
            self._compacted[key] = entry
            self._compacted_bytes += size
            while self._compacted and (
                len(self._compacted) > self._compacted_max
                or self._compacted_bytes > self._compacted_max_bytes
            ):
                _, evicted = self._compacted.popitem(last=False)
                self._compacted_bytes -= evicted.size

    @property
    def compacted_bytes(self) -> int:
        return self._compacted_bytes
