"""Exact BPE tokenizers (tiktoken) and the chars/4 heuristic."""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import tiktoken

from app.tokenizers.offline_ranks import ENCODINGS, load_ranks

# Below this many characters a batch is counted on the calling thread: handing work to
# another thread costs more than it saves.
PARALLEL_MIN_CHARS = 200_000
_POOL_WORKERS = max(1, min(4, os.cpu_count() or 1))


class TiktokenTokenizer:
    """Counts with a tiktoken `Encoding` built from offline ranks."""

    _pool: ThreadPoolExecutor | None = None
    _pool_lock = threading.Lock()

    def __init__(self, encoding: Any) -> None:
        self._encoding = encoding
        self._name: str = encoding.name

    @property
    def name(self) -> str:
        return self._name

    def count(self, text: str) -> int:
        if not text:
            return 0
        # Special-token text inside user content is counted as ordinary text, the way
        # providers treat it, instead of raising.
        return len(self._encoding.encode_ordinary(text))

    def count_many(self, texts: list[str]) -> list[int]:
        """Counts several texts, in order; big batches are split across threads, since
        tiktoken's encoder releases the GIL."""
        total_chars = sum(map(len, texts))
        if _POOL_WORKERS == 1 or total_chars < PARALLEL_MIN_CHARS or len(texts) < 2:
            return self._count_sequential(texts)
        slices = _balanced_slices(texts, total_chars, _POOL_WORKERS)
        pool = self._shared_pool()
        parts = pool.map(self._count_sequential, [texts[lo:hi] for lo, hi in slices])
        return [count for part in parts for count in part]

    def _count_sequential(self, texts: list[str]) -> list[int]:
        encode = self._encoding.encode_ordinary
        return [len(encode(t)) if t else 0 for t in texts]

    @classmethod
    def _shared_pool(cls) -> ThreadPoolExecutor:
        with cls._pool_lock:
            if cls._pool is None:
                cls._pool = ThreadPoolExecutor(_POOL_WORKERS, thread_name_prefix="tokenize")
            return cls._pool


def _balanced_slices(texts: list[str], total_chars: int, parts: int) -> list[tuple[int, int]]:
    """Contiguous index ranges holding about the same number of characters each."""
    target = total_chars / parts
    slices: list[tuple[int, int]] = []
    start, running = 0, 0
    for index, text in enumerate(texts):
        running += len(text)
        if running >= target * (len(slices) + 1) and len(slices) < parts - 1:
            slices.append((start, index + 1))
            start = index + 1
    slices.append((start, len(texts)))
    return [(lo, hi) for lo, hi in slices if hi > lo]


class CharsPerTokenTokenizer:
    """The design chapter's heuristic: ceil(characters / 4)."""

    name = "chars/4"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / 4)

    def count_many(self, texts: list[str]) -> list[int]:
        return [math.ceil(len(t) / 4) for t in texts]


class TokenizerRegistry:
    """Builds each encoding once, on first use, thread-safely."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: dict[str, TiktokenTokenizer] = {}
        self._heuristic = CharsPerTokenTokenizer()

    def get(self, name: str) -> TiktokenTokenizer | CharsPerTokenTokenizer:
        """The tokenizer called `name` (`o200k_base`, `cl100k_base` or `chars/4`)."""
        if name == CharsPerTokenTokenizer.name:
            return self._heuristic
        cached = self._loaded.get(name)
        if cached is not None:
            return cached
        spec = ENCODINGS.get(name)
        if spec is None:
            raise KeyError(name)
        with self._lock:
            cached = self._loaded.get(name)
            if cached is None:
                encoding = tiktoken.Encoding(
                    name=spec.name,
                    pat_str=spec.pattern,
                    mergeable_ranks=load_ranks(spec),
                    special_tokens=spec.special_tokens,
                )
                cached = TiktokenTokenizer(encoding)
                self._loaded[name] = cached
        return cached

    def warm(self) -> None:
        """Load every exact encoding now (start-up), so readiness means ready."""
        for name in ENCODINGS:
            self.get(name)

    @property
    def loaded(self) -> tuple[str, ...]:
        return tuple(self._loaded)
