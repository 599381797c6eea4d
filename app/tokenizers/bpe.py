"""Exact BPE tokenizers (tiktoken) and the chars/4 heuristic."""

from __future__ import annotations

import math
import threading
from typing import Any

import tiktoken

from app.tokenizers.offline_ranks import ENCODINGS, load_ranks


class TiktokenTokenizer:
    """Counts with a tiktoken `Encoding` built from offline ranks."""

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
        """Counts several texts, in order."""
        encode = self._encoding.encode_ordinary
        return [len(encode(t)) if t else 0 for t in texts]


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
