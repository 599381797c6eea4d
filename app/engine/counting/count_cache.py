"""A bounded LRU of per-message token counts keyed by content hash."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable


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

    def put(self, key: Hashable, value: int) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._max:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)
