"""A bounded LRU of per-message token counts keyed by content hash."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence


class TokenCountCache:
    """Maps (tokenizer, rules, content digest) → tokens; evicts least recently used."""

    def __init__(self, max_entries: int = 200_000) -> None:
        self._max = max_entries
        self._data: OrderedDict[Hashable, int] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> int | None:
        with self._lock:
            value = self._data.get(key)
            if value is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def get_many(self, keys: Sequence[Hashable]) -> list[int | None]:
        """`get` of each key under one lock (a history's messages in one pass)."""
        out: list[int | None] = []
        append = out.append
        with self._lock:
            data = self._data
            lookup = data.get
            move = data.move_to_end
            for key in keys:
                value = lookup(key)
                if value is not None:
                    move(key)
                append(value)
            found = len(out) - out.count(None)
            self.hits += found
            self.misses += len(out) - found
        return out

    def put(self, key: Hashable, value: int) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._max:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)
