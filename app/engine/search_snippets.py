"""The snippet of a search hit: a few words of its indexed text around the query's
words, the matched words marked.

Made here rather than by the databases' highlighters because those re-tokenize every
hit's whole text: FTS5's `snippet()` and PostgreSQL's `ts_headline` were most of a
search's time on a 10,000-entry session (bench/store.py --search: of ~200 ms on
PostgreSQL, ~150 were `ts_headline` for the ten hits shown). Here a hit's text is
searched (`str.find`) for the words that could match, only those are stemmed, and only
the chosen window is split into words.

Which entries match is the database's decision; this only shows why. The stemmer is the
one of the backend's index (Porter for FTS5, Snowball English for PostgreSQL), given by
the caller, so `deploying` in a query marks `deployed` in the text as the index did.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator
from functools import lru_cache

from app.engine.search import SearchQuery

Stemmer = Callable[[str], str]

SNIPPET_WORDS = 24
ELLIPSIS = "…"
# Words shown before the first marked one, so it is read in its sentence.
_LEAD_WORDS = 3
# Characters around a match split into words to cut the window from: enough for
# SNIPPET_WORDS words of ordinary text, bounded for one-line megabyte outputs.
_REGION_BEFORE, _REGION_AFTER = 200, 800
# A candidate window: this many characters after a match are searched for the others.
_WINDOW_CHARS = 160
# Longest run of non-words shown between two words; words looked at per query word.
_GAP_CHARS, _MAX_MATCHES = 16, 2_000
# Characters of a hit lower-cased first while looking for its query words (then twice
# as many each time).
_FIRST_CHUNK_CHARS = 4096
_WORD = re.compile(r"\w+", re.UNICODE)
_SPACE = re.compile(r"\s+")


class _Matcher:
    """Which words of a text match the query's terms: the same stem as a query word, or
    a prefix term's start. Remembers each word it was asked about (one per search)."""

    def __init__(self, stems: set[str], prefixes: set[str], stem: Stemmer) -> None:
        self.stems = frozenset(stems)
        self.prefixes = tuple(prefixes)
        self.keys = len(self.stems) + len(self.prefixes)
        self._stem = stem
        self._known: dict[str, str | None] = {}
        # A stem keeps its word's first letters (Porter and Snowball change endings):
        # words starting like a stem or a prefix are the only ones worth stemming.
        self.starts = frozenset(w[:3] for w in self.stems | set(prefixes) if w)

    @classmethod
    def of(cls, query: SearchQuery, stem: Stemmer) -> _Matcher | None:
        stems: set[str] = set()
        prefixes: set[str] = set()
        for term in query.terms:
            stems.update(stem(w) for w in (term.words[:-1] if term.prefix else term.words))
            if term.prefix:
                prefixes.add(term.words[-1])
        return cls(stems, prefixes, stem) if stems or prefixes else None

    def key(self, word: str) -> str | None:
        """The query word `word` matches (its stem or prefix), or None."""
        if word in self._known:
            return self._known[word]
        lowered = word.lower()
        key = next((p + "*" for p in self.prefixes if lowered.startswith(p)), None)
        if key is None:
            stemmed = self._stem(lowered)
            key = stemmed if stemmed in self.stems else None
        self._known[word] = key
        return key


class _LowerCaseLonger(Exception):
    """A character of the text whose lower case is longer ("İ"): offsets would drift."""


def _candidates(text: str, starts: frozenset[str]) -> Iterator[tuple[int, str]]:
    """The words of `text` beginning with one of `starts` in any case, with their
    offsets, in order (at most _MAX_MATCHES for each start). Found with `str.find` on
    the lower-cased text: a regular expression for the same took 50-300 ns a character,
    most of a search's time for a hit of a few kilobytes. The text is lower-cased a
    chunk at a time as the words are asked for, so a hit whose query words are found
    together near its start is not lower-cased whole (a 30 kB tool result: ~0.1 ms).
    Raises _LowerCaseLonger, possibly after yielding, for a text the offsets of its
    lower case do not fit."""
    size = len(text)
    # Σ's lower case depends on the letters around it (σ, or ς ending a word): only
    # the whole text lowers as the whole text does.
    chunk = size if "\u03a3" in text else _FIRST_CHUNK_CHARS
    longest = max((len(start) for start in starts), default=1)
    taken = dict.fromkeys(starts, 0)
    begin = 0
    while begin < size:
        # Each chunk twice the last: a text read to its end is read in a few pieces.
        end, chunk = min(size, begin + chunk), chunk * 2
        # One character before (is a match the start of a word?) and enough after for
        # a start that crosses into the next chunk.
        low, high = max(0, begin - 1), min(size, end + longest - 1)
        lowered = text[low:high].lower()
        if len(lowered) != high - low:
            raise _LowerCaseLonger
        found: dict[int, str] = {}
        for start in starts:
            at = lowered.find(start, begin - low)
            while at != -1 and at + low < end and taken[start] < _MAX_MATCHES:
                if at + low == 0 or not _is_word_character(lowered[at - 1]):
                    word = _WORD.match(text, at + low)
                    if word is not None:
                        found[at + low] = word.group()
                        taken[start] += 1
                at = lowered.find(start, at + 1)
        yield from sorted(found.items())
        begin = end


def _case_blind_candidates(text: str, starts: frozenset[str]) -> Iterator[tuple[int, str]]:
    """`_candidates` for a text whose lower case is longer: a case-blind expression."""
    return ((m.start(), m.group()) for m in _case_blind(starts).finditer(text))


def _is_word_character(character: str) -> bool:
    return character.isalnum() or character == "_"


@lru_cache(maxsize=64)
def _case_blind(starts: frozenset[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(s) for s in sorted(starts, key=len, reverse=True))
    return re.compile(rf"\b(?:{alternatives})\w*", re.IGNORECASE | re.UNICODE)


class Snippets:
    """The snippets of one query's hits: the matcher is made once, for all of them."""

    def __init__(
        self,
        query: SearchQuery,
        stem: Stemmer,
        *,
        words: int = SNIPPET_WORDS,
        mark: tuple[str, str] = ("**", "**"),
    ) -> None:
        self._matcher = _Matcher.of(query, stem)
        self._words = words
        self._mark = mark

    def of(self, text: str) -> str:
        """Up to `words` words of `text` where the most different query words are close
        together (the earliest such place), matched words between `mark`; `…` where text
        was left out. No matching word found (a stemmer disagreeing with the index): the
        opening words."""
        matcher = self._matcher
        found = _anchor(text, matcher)
        anchor = found if found is not None else 0
        region_start = max(0, anchor - _REGION_BEFORE)
        region = list(_WORD.finditer(text, region_start, anchor + _REGION_AFTER))
        if not region:
            return ""
        first = next((i for i, m in enumerate(region) if m.start() >= anchor), 0)
        start = max(0, first - _LEAD_WORDS) if found is not None else 0
        pieces: list[str] = []
        if region_start > 0 or start > 0:
            pieces.append(ELLIPSIS + " ")
        previous_end: int | None = None
        for word in region[start : start + self._words]:
            if previous_end is not None:
                pieces.append(_between(text[previous_end : word.start()]))
            marked = matcher is not None and matcher.key(word.group()) is not None
            pieces.append(
                f"{self._mark[0]}{word.group()}{self._mark[1]}" if marked else word.group()
            )
            previous_end = word.end()
        if previous_end is not None:
            more = _WORD.search(text, previous_end) is not None
            pieces.append(" " + ELLIPSIS if more else _between(text[previous_end:]))
        return _SPACE.sub(" ", "".join(pieces)).strip()


def _between(gap: str) -> str:
    """What stands between two shown words, spaces collapsed; a long run of punctuation
    (a `-----` rule, a base64 tail) shortened."""
    gap = _SPACE.sub(" ", gap)
    return gap if len(gap) <= _GAP_CHARS else gap[: _GAP_CHARS - 1].rstrip() + ELLIPSIS + " "


def _anchor(text: str, matcher: _Matcher | None) -> int | None:
    """The offset of the first match followed, within _WINDOW_CHARS, by the most
    different query words: the earliest of equals, found in one pass that stops at the
    first place holding them all. None without a match."""
    if matcher is None:
        return None
    try:
        return _best_window(_candidates(text, matcher.starts), matcher)
    except _LowerCaseLonger:
        return _best_window(_case_blind_candidates(text, matcher.starts), matcher)


def _best_window(candidates: Iterator[tuple[int, str]], matcher: _Matcher) -> int | None:
    window: deque[tuple[int, str]] = deque()
    best: int | None = None
    best_count = 0
    for offset, word in candidates:
        key = matcher.key(word)
        if key is None:
            continue
        window.append((offset, key))
        while offset - window[0][0] > _WINDOW_CHARS:
            window.popleft()
        different = len({k for _, k in window})
        if different > best_count:
            best, best_count = window[0][0], different
            if best_count == matcher.keys:
                break
    return best
