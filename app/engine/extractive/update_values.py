"""The values an update sets and sets aside, beyond what `values_in` reads as values.

A value given in plain words is still a value where an update puts one: "the mocking
library has changed — respx", "the log library is polars now", "please use hypothesis for
the one allowed dependency". Without it the update carries no value to compare, the old
`polars` is never replaced, and both are shown as current.

The value an update names after "not", "instead of", "forget", "ignore the" … is the one it
sets aside, never the new one: "the mocking library is structlog, not attrs" changes what
said attrs, not an unrelated rule that happens to name structlog.
"""

from __future__ import annotations

import functools
import re

from app.engine.extractive.statements import content_words, values_in

# A person's name goes on in capitalised words: "Bo Lindqvist".
_NAME_REST = r"(?-i:(?:\s+[A-Z][a-z]+){0,2})"
_FULL_NAME = re.compile(r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+")
# Where an update puts its value: after the verb or mark that sets it ("is", "became",
# "changed to", "use", "—", ":"), as the clause's last word or before what says when or
# for what ("now", "from today", "for the parser", ", not …").
_SET_PLAINLY = re.compile(
    r"(?:\b(?:is|are|became|becomes|be|to|with|use|using|now|it['’]s|that['’]s)|[—–:=]|\s-)\s+"
    r"(?:now\s+|just\s+|simply\s+)?[`\"']?(?P<value>[A-Za-z][\w.+-]*\w" + _NAME_REST + r")[`\"']?"
    r"(?=\s*(?:$|[.!;,)(]|\s(?:now|instead|from|going|these|this|as|today|for|then|again|"
    r"here|there|please|anymore)\b))",
    re.IGNORECASE,
)
# A request setting a thing to a plain word: "Make the date library hypothesis instead".
_MADE_INTO = re.compile(
    r"^(?:please\s+)?(?:make|set|switch|change)\s+(?:the\s+|our\s+|my\s+)?(?:[\w-]+\s+){1,5}?"
    r"(?:to\s+|into\s+)?[`\"']?(?P<value>[A-Za-z][\w.+-]*\w)[`\"']?(?=\s+instead\b)",
    re.IGNORECASE,
)
# What sets a value aside, and the value right after it ("not 8080", "forget `attrs`",
# "ignore the tenacity I gave you", "instead of the old host").
_SETS_ASIDE = re.compile(
    r"(?:\b(?:not|instead\s+of|rather\s+than|forget(?:\s+about)?|ignore|disregard|scrap|drop|"
    r"no\s+longer|no\s+more|formerly|previously|used\s+to\s+be)|\(\s*was)\s+"
    r"(?:the\s+|that\s+|my\s+|about\s+)?(?P<rest>.{1,80})",
    re.IGNORECASE | re.DOTALL,
)
_PLAIN_WORD = re.compile(
    r"[`\"']?([A-Za-z][\w.+-]*\w" + _NAME_REST + r")[`\"']?(?=\s*(?:$|[.!;,)]|\s(?i:i|we)\b))"
)


# Words that say how a thing is, not which one it is: "the tests are fine now".
_STATES_TEXT = (
    "fine ok okay done ready good bad broken wrong right correct enough same different "
    "available required optional deprecated gone back off on over up down live stable"
)
_STATES = frozenset(_STATES_TEXT.split())


def _plain_word_ok(word: str) -> bool:
    # A stopword or a state is no value: only a word content_words keeps, three letters
    # or more.
    folded = word.casefold()
    return len(word) >= 3 and folded not in _STATES and bool(content_words(folded))


@functools.lru_cache(maxsize=4096)
def set_values(text: str, update_words: frozenset[str]) -> frozenset[str]:
    """The values `text` sets: those `values_in` reads, and a plain word where a value goes."""
    found = set(values_in(text))
    for match in [*_SET_PLAINLY.finditer(text), *_MADE_INTO.finditer(text)]:
        word = match.group("value")
        if word.casefold() in update_words or not _plain_word_ok(word):
            continue
        if found and not _FULL_NAME.fullmatch(word):
            # With a value of its own, a plain word is more likely what the statement is
            # about ("whoever is responsible for billing: it's Chidi Okafor"); a full name
            # still is one ("Bo Lindqvist", of which `values_in` read "Lindqvist").
            continue
        if any(word in value for value in found):
            continue
        # "Bo Lindqvist" stands for the "Lindqvist" read inside it.
        found = {value for value in found if value not in word} | {word}
    return frozenset(found)


@functools.lru_cache(maxsize=4096)
def set_aside_values(text: str) -> frozenset[str]:
    """The values `text` sets aside: the value (or plain word) right after "not",
    "instead of", "forget", "ignore the" …"""
    found: set[str] = set()
    for match in _SETS_ASIDE.finditer(text):
        rest = match.group("rest")
        values = values_in(rest)
        if values and rest.lstrip("`\"' ").startswith(values[0]):
            # "not $700." reads the money with its full stop.
            found.add(values[0].rstrip(".,;:"))
            continue
        plain = _PLAIN_WORD.match(rest)
        if plain and _plain_word_ok(plain.group(1)):
            found.add(plain.group(1))
    return frozenset(found)
