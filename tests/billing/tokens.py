"""How the fake counts tokens: o200k_base (tiktoken ranks read offline, as the service
does) on a plain rendering of each block or message, plus fixed framing per block.

Neither vendor's own tokenizer for Claude is available offline; o200k on the same
rendering every time is what matters here, since caching compares prefixes and bills
token counts of the same bytes on every request. The renderings are in the cache
modules; counts are memoized by text, so resending a history costs one pass over new text.
"""

from __future__ import annotations

import threading

from app.tokenizers.bpe import TokenizerRegistry

_REGISTRY = TokenizerRegistry()
_MEMO: dict[str, int] = {}
_MEMO_LOCK = threading.Lock()
# Memoized texts beyond this are counted afresh (a bench run stays well below it).
_MEMO_LIMIT = 200_000


def count_text(text: str) -> int:
    """o200k tokens of `text`, memoized."""
    if not text:
        return 0
    cached = _MEMO.get(text)
    if cached is not None:
        return cached
    tokens = _REGISTRY.get("o200k_base").count(text)
    with _MEMO_LOCK:
        if len(_MEMO) < _MEMO_LIMIT:
            _MEMO[text] = tokens
    return tokens


def common_prefix_chars(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings."""
    limit = min(len(a), len(b))
    low, high = 0, limit
    # Binary search on slices: C-speed comparisons instead of a Python loop per char.
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
