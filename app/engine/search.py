"""Full-text search over a transcript, the pure half: what an entry is indexed by, and
the one query syntax both stores understand (parsed here, so a query that the database
would choke on is refused before it reaches it, the same way on every backend).

Query syntax (a small subset of what search boxes accept):
  words            every word must appear (in any order); stemmed (`deploying` → deploy)
  "two words"      the words next to each other, in that order
  word*            any word starting with `word`
  -word            entries without the word (not alone: something must be searched for)
  a OR b           either side (OR binds tighter than the implicit AND)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from enum import StrEnum

from app.engine.messages import BlockKind, Message

MAX_QUERY_CHARS = 500
MAX_QUERY_TERMS = 32
# An entry's indexed text stops here: a 10 MB tool result is found by its first megabyte.
MAX_INDEXED_CHARS = 1_000_000
# Characters a term may hold: letters, digits, underscore (what both tokenizers keep).
_WORD = re.compile(r"\w+", re.UNICODE)


class SearchQueryError(ValueError):
    """The query cannot be searched; the message says what to change."""


class MatchMode(StrEnum):
    ALL = "all"
    ANY = "any"


@dataclass(frozen=True, slots=True)
class SearchTerm:
    """Words to find together (one word, or a phrase), optionally as a prefix."""

    words: tuple[str, ...]
    prefix: bool = False

    @property
    def phrase(self) -> bool:
        return len(self.words) > 1


@dataclass(frozen=True, slots=True)
class SearchClause:
    """Terms of which at least one must match (one term: that term)."""

    alternatives: tuple[SearchTerm, ...]


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A parsed query: clauses that must all match (or any, in ANY mode), and terms
    that must not."""

    clauses: tuple[SearchClause, ...]
    excluded: tuple[SearchTerm, ...] = ()
    mode: MatchMode = MatchMode.ALL

    def loosened(self) -> SearchQuery | None:
        """The same terms with any clause enough (None when that changes nothing)."""
        if self.mode is MatchMode.ANY or len(self.clauses) < 2:
            return None
        return SearchQuery(self.clauses, self.excluded, MatchMode.ANY)

    @property
    def terms(self) -> tuple[SearchTerm, ...]:
        return tuple(t for clause in self.clauses for t in clause.alternatives)


_TOKEN = re.compile(r'\s*(?:(-)?"([^"]*)"|(-)?([^\s"]+)|("))')


def parse_query(text: str) -> SearchQuery:
    """Parses the query syntax above; SearchQueryError says what is wrong."""
    if len(text) > MAX_QUERY_CHARS:
        raise SearchQueryError(f"the query is {len(text)} characters; at most {MAX_QUERY_CHARS}")
    if not text.strip():
        raise SearchQueryError("the query is empty: give at least one word to search for")
    clauses: list[list[SearchTerm]] = []
    excluded: list[SearchTerm] = []
    pending_or = False
    position = 0
    while position < len(text):
        found = _TOKEN.match(text, position)
        if found is None or found.end() == position:
            break
        position = found.end()
        neg_phrase, phrase, neg_word, word, stray_quote = found.groups()
        if stray_quote:
            raise SearchQueryError('unbalanced quote: close the phrase with a second "')
        if word == "OR" and not neg_word:
            if not clauses or pending_or:
                raise SearchQueryError("OR needs a word on each side")
            pending_or = True
            continue
        term = _term(phrase if phrase is not None else word)
        if neg_phrase or neg_word:
            if pending_or:
                raise SearchQueryError("OR cannot join an excluded -term")
            if term is not None:
                excluded.append(term)
            continue
        if term is None:
            continue
        if pending_or:
            clauses[-1].append(term)
            pending_or = False
        else:
            clauses.append([term])
    if pending_or:
        raise SearchQueryError("OR needs a word on each side")
    if not clauses:
        raise SearchQueryError(
            "the query has no word to search for (only punctuation, or only -excluded terms)"
        )
    count = sum(len(c) for c in clauses) + len(excluded)
    if count > MAX_QUERY_TERMS:
        raise SearchQueryError(f"the query has {count} terms; at most {MAX_QUERY_TERMS}")
    return SearchQuery(
        clauses=tuple(SearchClause(tuple(c)) for c in clauses), excluded=tuple(excluded)
    )


def _term(raw: str) -> SearchTerm | None:
    prefix = raw.endswith("*") and len(raw) > 1
    words = tuple(w.lower() for w in _WORD.findall(raw))
    if not words:
        return None
    if prefix and len(words) > 1:
        # `foo.bar*`: the phrase "foo bar" whose last word is a prefix.
        return SearchTerm(words, prefix=True)
    return SearchTerm(words, prefix=prefix)


# --- What an entry is indexed by ------------------------------------------------------


def indexed_text(message: Message, tool_names: MutableMapping[str, str]) -> str:
    """The words an entry is found by: its text, thinking, tool calls (name and
    arguments) and tool results (the tool's name and the output). `tool_names` maps the
    call ids seen so far to their tool's name (a result names its tool only by id in most
    formats); the calls of `message` are added to it."""
    parts: list[str] = []
    for block in message.blocks:
        if block.kind is BlockKind.TOOL_CALL:
            if block.tool_call_id and block.tool_name:
                tool_names[block.tool_call_id] = block.tool_name
            parts.extend(p for p in (block.tool_name, block.arguments) if p)
        elif block.kind is BlockKind.TOOL_RESULT:
            name = block.tool_name or _name_of(block.tool_call_id, tool_names)
            parts.extend(p for p in (name, block.text) if p)
        elif block.kind in (BlockKind.TEXT, BlockKind.THINKING, BlockKind.DOCUMENT) and block.text:
            parts.append(block.text)
    if message.name:
        parts.append(message.name)
    text = "\n".join(parts)
    return text[:MAX_INDEXED_CHARS]


def _name_of(call_id: str | None, tool_names: Mapping[str, str]) -> str | None:
    return tool_names.get(call_id) if call_id else None


def tool_call_names(message: Message) -> dict[str, str]:
    """The tool calls of `message`: call id → tool name."""
    return {
        b.tool_call_id: b.tool_name
        for b in message.blocks
        if b.kind is BlockKind.TOOL_CALL and b.tool_call_id and b.tool_name
    }


def raw_text(value: object) -> str:
    """Every string inside a JSON value, one per line: how an entry that no format reads
    is still found."""
    parts: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return "\n".join(parts)[:MAX_INDEXED_CHARS]
