"""Exact BPE tokenizers and the chars/4 heuristic.

The reference is tiktoken's `Encoding`, built from ranks files verified by sha256
(`offline_ranks`). Counting — all the estimator needs — goes through the Rust BPE of the
`bpe-openai` wheel when it is installed: it counts without materializing tokens, 2–3x
faster, in linear time even on long runs of one character. It is only used after it has
given the same count as tiktoken on every probe text at load time.
"""

from __future__ import annotations

import logging
import math
import threading
import warnings
from typing import Any, Protocol

import tiktoken

from app.tokenizers.offline_ranks import ENCODINGS, load_ranks

log = logging.getLogger(__name__)

# Texts on which the fast counter must agree with tiktoken before it is trusted: scripts,
# digits, whitespace runs, code, special-token look-alikes, emoji, long repeats.
PROBES: tuple[str, ...] = (
    "",
    "hello world",
    "Keep the public interface unchanged.",
    "def sum(a, b):\n    return a + b\n\n\n",
    "    indented\ttabs\r\nand CRLF\r\n",
    "12345678901234567890 3.14159 -42 0x1F",
    "修复求和函数：sum(2, 3) 返回了 23，预期结果是 5。",
    "Привет, мир! Γειά σου Κόσμε! مرحبا بالعالم",
    "emoji 👩‍💻🚀 and combining é",
    "<|endoftext|> is ordinary text here <|fim_prefix|>",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "                                                                      trailing ",
    '{"path": "/home/user/src/app.py", "old_string": "x = 1", "new_string": "x = 2"}',
    "Traceback (most recent call last):\n  File \"t.py\", line 3\nKeyError: 'x'\n",
    "It's they're we've I'll you'd HE'S",
)


class _Counter(Protocol):
    def count(self, text: str) -> int: ...


class TiktokenTokenizer:
    """Exact counts for one encoding (fast Rust counter when verified, else tiktoken)."""

    def __init__(self, encoding: Any, fast: _Counter | None = None) -> None:
        self._encoding = encoding
        self._name: str = encoding.name
        self._fast = fast

    @property
    def name(self) -> str:
        return self._name

    @property
    def uses_fast_counter(self) -> bool:
        return self._fast is not None

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._fast is not None:
            return self._fast.count(text)
        # Special-token text inside user content is ordinary text, as providers treat it.
        return len(self._encoding.encode_ordinary(text))

    def count_many(self, texts: list[str]) -> list[int]:
        """Counts several texts, in order."""
        count = self.count
        return [count(t) for t in texts]

    def reference_count(self, text: str) -> int:
        """tiktoken's own count, bypassing the fast counter."""
        return len(self._encoding.encode_ordinary(text)) if text else 0


class CharsPerTokenTokenizer:
    """The design chapter's heuristic: ceil(characters / 4)."""

    name = "chars/4"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / 4)

    def count_many(self, texts: list[str]) -> list[int]:
        return [math.ceil(len(t) / 4) for t in texts]


def _verified_fast_counter(name: str, encoding: Any) -> _Counter | None:
    """bpe-openai's counter for `name` if installed and it agrees with tiktoken."""
    try:
        with warnings.catch_warnings():
            # bpe-openai reads its packaged ranks files (on import, too) through a
            # deprecated importlib.resources call; that is its business, not a fault here.
            warnings.simplefilter("ignore", DeprecationWarning)
            from bpe_openai import _bindings

            fast: _Counter = _bindings.tokenizer_for_encoding(name)
    except ImportError:
        return None
    except Exception as exc:  # the binding raises its own error types
        log.warning("fast counter for %s unavailable: %s", name, exc)
        return None
    for probe in PROBES:
        if fast.count(probe) != len(encoding.encode_ordinary(probe)):
            log.warning("fast counter for %s disagrees with tiktoken; not used", name)
            return None
    return fast


_BUILT: dict[tuple[str, bool], TiktokenTokenizer] = {}
_BUILD_LOCK = threading.Lock()


def _built_tokenizer(name: str, use_fast: bool) -> TiktokenTokenizer:
    """One verified tokenizer per encoding per process.

    Building one reads and hashes the ranks file, builds tiktoken's tables and checks the
    fast counter: about two seconds, and the result never changes within a process. Every
    registry shares it (a test suite starts hundreds of apps; a worker process, one).
    """
    with _BUILD_LOCK:
        built = _BUILT.get((name, use_fast))
        if built is None:
            spec = ENCODINGS[name]
            encoding = tiktoken.Encoding(
                name=spec.name,
                pat_str=spec.pattern,
                mergeable_ranks=load_ranks(spec),
                special_tokens=spec.special_tokens,
            )
            fast = _verified_fast_counter(name, encoding) if use_fast else None
            built = _BUILT[(name, use_fast)] = TiktokenTokenizer(encoding, fast)
        return built


# Every tokenizer a caller may name: the exact encodings, then the heuristic.
TOKENIZER_NAMES: tuple[str, ...] = (*ENCODINGS, CharsPerTokenTokenizer.name)


class TokenizerRegistry:
    """Builds each encoding once, on first use, thread-safely."""

    def __init__(self, use_fast_counter: bool = True) -> None:
        self._lock = threading.Lock()
        self._loaded: dict[str, TiktokenTokenizer] = {}
        self._heuristic = CharsPerTokenTokenizer()
        self._use_fast = use_fast_counter

    def get(self, name: str) -> TiktokenTokenizer | CharsPerTokenTokenizer:
        """The tokenizer called `name` (`o200k_base`, `cl100k_base` or `chars/4`)."""
        if name == CharsPerTokenTokenizer.name:
            return self._heuristic
        cached = self._loaded.get(name)
        if cached is not None:
            return cached
        if name not in ENCODINGS:
            raise KeyError(name)
        with self._lock:
            cached = self._loaded.get(name)
            if cached is None:
                cached = _built_tokenizer(name, self._use_fast)
                self._loaded[name] = cached
        return cached

    def warm(self) -> None:
        """Load every exact encoding now (start-up), so readiness means ready."""
        for name in ENCODINGS:
            self.get(name)

    @property
    def loaded(self) -> tuple[str, ...]:
        return tuple(self._loaded)
