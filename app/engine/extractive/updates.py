"""Superseded values: a later statement that changes an earlier one's value replaces it.

"The budget cap is now $700" after "Budget cap is $500 total. Never exceed without explicit
approval." is the same subject (budget, cap) with a new value of the same shape (an amount):
the summary then holds the new statement as current and quotes the earlier one as replaced,
so the old value is never presented as current. Two statements about different subjects
that happen to share a shape ("staging listens on 5433", "prod listens on 5432") are not an
update: the subject words must match, and a word must tell that it is a change ("now",
"instead", "correction", "from now on", "changed to") — "never touch a.py" and then "never
touch b.py" are two rules.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from app.engine.extractive.statements import content_words, split_aside, values_in, without_lead
from app.engine.extractive.update_values import set_aside_values, set_values

REPLACES = " (replaces earlier: "
# The score of an update that names the value it replaces: above any other match.
NAMES_OLD_VALUE = 100.0
_REPLACES_SUFFIX = re.compile(r"^(.*?) \(replaces earlier: (.*)\)$", re.DOTALL)
_UPDATE_CUE = re.compile(
    r"\b(?:now|instead|no\s+longer|any\s?more|changed?|changing|switch(?:ed)?|moved?|"
    r"correction|correct(?:ed)?|actually|update[ds]?|revised?|scratch\s+that|never\s+mind|"
    r"bec[ao]mes?|"
    r"from\s+now\s+on|going\s+forward|as\s+of|rather|"
    # "New" says a value changed when it is about the value ("New info on …", "the new
    # port is 80"), not when it describes a thing ("snake_case for new JSON fields").
    r"new\s+(?:info\w*|value|number|one|setting|figure|address|plan)|"
    r"the\s+new\s+\w+(?:\s+\w+)?\s+(?:is|are|=|will\s+be)|replace[ds]?|should\s+be|"
    r"is\s+(?:going|set)\s+to\s+be|not\s+\S+\s+but|raised?|lowered?|increased?|reduced?|"
    r"bumped?|extended?|shortened?|override|overrid(?:e|den)|disregard|"
    r"(?:ignore|forget)\s+what\s+i\s+(?:said|wrote|told\s+you)|following\s+up\s+on|"
    r"i\s+misspoke|my\s+mistake|(?:was|were)\s+wrong|earlier\s+i\s+said|from\s+here\s+on|"
    r"turns?\s+out|turned\s+out|not\s+what\s+i\s+(?:said|wrote|told\s+you)|"
    # "Ignore the 1.24 I gave you", "scrap that number".
    r"(?:ignore|disregard|forget|scrap)\s+(?:the|that|my)\b|"
    # A change said as when it starts or what it became: "these days", "starting
    # Monday", "effective today", "we went with", "renamed to", "I meant".
    r"these\s+days|from\s+(?:today|tomorrow|monday|next\s+\w+)|starting\s+(?:today|"
    r"tomorrow|now|next\s+\w+|monday|this\s+\w+)|effective\s+(?:today|immediately|now)|"
    r"(?:we|i)\s+(?:went|have\s+gone|['’]ve\s+gone)\s+(?:with|to)|swapped|migrated\s+to|"
    r"relocated|renamed|took\s+over|handed\s+over|amended|adjusted|revised|i\s+meant|"
    r"meant\s+to\s+(?:say|write)|typo|oops|(?:is|are)\s+different\s+now|"
    r"(?:has|have)\s+been\s+(?:changed|updated|moved|replaced|bumped|raised|lowered)|"
    r"in\s+place\s+of|replaced\s+by|no\s+more\s+\S+,)\b",
    re.IGNORECASE,
)
# Words that say how an update is phrased, not what it is about.
_UPDATE_WORDS_TEXT = (
    "now instead longer anymore change changed changing switch switched move moved "
    "correction correct corrected actually update updated updates revised revise scratch "
    "mind forward new rather replace replaced replaces should going set raise raised "
    "lower lowered increase increased reduce reduced bump bumped extend extended shorten "
    "shortened override heads today yesterday use using plan please note disregard ignore "
    "forget said wrote told following misspoke wrong earlier small here mistake make gave "
    "plan heads-up got days starting effective went gone swapped renamed relocated "
    "amended adjusted meant typo oops different became becomes become previously formerly "
    "got"
)
# Compared with content words, which are stemmed ("moved" → "mov"): both forms.
_UPDATE_WORDS = frozenset(_UPDATE_WORDS_TEXT.split()) | content_words(_UPDATE_WORDS_TEXT)


def main_text(item: str) -> str:
    """An item without the quote of what it replaced."""
    found = _REPLACES_SUFFIX.match(item)
    return found.group(1) if found else item


def replaced_text(item: str) -> str | None:
    """The earlier statement an item says it replaces, if it says so."""
    found = _REPLACES_SUFFIX.match(item)
    return found.group(2) if found else None


def with_replaced(new: str, old: str) -> str:
    """`new`, saying which earlier statement it replaces."""
    return f"{new}{REPLACES}{main_text(old)})"


# "At most 80 lines", "the length limit", "no more than 5", "the latency target", "the
# GPU allowance", "larger than 51 KB": all state a limit.
_LIMIT = re.compile(
    r"\b(?:at\s+(?:most|least)|no\s+(?:more|less|fewer)\s+than|limit\w*|max\w*|min(?:imum)?|"
    r"cap(?:ped|s)?|under|within|up\s+to|exceed\w*|ceiling|allowance|quota|target|deadline|budget|"
    r"timeout|below|above|inside|fits?\s+(?:in|into|within|under)|(?:larger|bigger|smaller|longer|shorter|more|less|"
    r"fewer)\s+than)\b",
    re.IGNORECASE,
)
# The same few things are named in many ways: where something runs ("lives on", "the box",
# "the machine"), who is responsible ("owns", "the owner", "handles"), when something
# happens, which folder, which version. A later statement naming its subject in other words
# ("where the pre-prod DB runs" for "The staging database lives on …") still shares the
# kind of subject; it counts as one shared word, beside the value's form.
_KINDS_OF_SUBJECT = {
    "@place": r"hosts?|servers?|machines?|box(?:es)?|instances?|nodes?|lives?|sits?|hosted|"
    r"located|where|runs?\s+(?:on|at)",
    "@owner": r"owners?|owns|owned|responsible|maintainers?|maintains|who|approv\w+|on-call",
    "@time": r"when|time|schedule\w*|starts?|kicks?\s+off|cutoff|window|nightly|daily|o['’]clock|"
    r"(?:after|before|until)\s+\d+|at\s+\d{1,2}[:.]\d{2}|every\s+(?:day|morning|evening|night|week)",
    "@duration": r"\d+\s*(?:minutes?|mins?|hours?|hrs?|seconds?|secs?|ms)|how\s+long|durations?|"
    r"run\s*time|time\s+allowed|timeouts?",
    "@folder": r"folders?|director(?:y|ies)|dirs?|paths?|written\s+to|stored|saved|lands?\s+in",
    "@version": r"versions?|releases?|oldest|newest|support(?:ed|s)?|runs?\s+on",
    "@count": r"how\s+many|number\s+of|count|roughly|about|approximately",
    "@size": r"sizes?|larger|bigger|smaller|heavier|kb|mb|gb|bytes|footprint",
    "@branch": r"branch(?:es)?|push(?:es|ed)?|force-push\w*|merg\w+",
    "@release": r"deploy(?:s|ed|ing|ments?)?|releases?|rollouts?|ship(?:s|ping)?",
    "@money": r"currency|currencies|money|amounts?|prices?|costs?|spend(?:ing)?|fees?",
    "@source": r"(?:comes?|fetched|pulled|downloaded|installed|sourced|gets?)\s+(?:\w+\s+)?from|"
    r"mirrors?|registr(?:y|ies)",
    # Near-synonyms of the things software work talks about, a thesaurus's groups.
    "@memory": r"memory|ram|heap|rss",
    "@port": r"ports?|listens?|listening|bound\s+to",
    "@people": r"customers?|accounts?|clients?|users?|tenants?|subscribers?|members?",
    "@meeting": r"meetings?|standups?|stand-ups?|syncs?|calls?|check-ins?",
    "@environment": r"sandbox(?:es)?|staging|test\s+environments?|pre-?prod|testing|"
    r"environments?",
    "@vendor": r"vendors?|suppliers?|providers?|third[- ]part(?:y|ies)|partners?",
    "@build": r"ci|builds?|pipelines?|jenkins|runners?",
    "@image": r"containers?|images?|docker",
    "@cache": r"cach(?:e|es|ing)|redis|memcached?",
    "@database": r"databases?|db|postgres(?:ql)?|mysql|sqlite|dba",
    "@night": r"nightly|overnight|nights?|midnight",
    "@region": r"regions?|zones?|data\s?cent(?:er|re)s?|dcs?|availability\s+zones?|locations?",
    "@language": r"languages?|locales?|langs?|translations?|spoken|written\s+in",
    "@repo": r"repos?|repositor(?:y|ies)|codebases?|monorepos?|projects?",
    "@queue": r"queues?|topics?|brokers?|message\s+bus|messaging|kafka|rabbitmq|sqs|pubsub",
    "@storage": r"buckets?|storage|blobs?|s3|disks?|volumes?",
    "@endpoint": r"endpoints?|urls?|apis?|routes?|webhooks?",
    "@secret": r"keys?|tokens?|secrets?|passwords?|credentials?|passphrases?",
    "@tests": r"tests?|test\s+suites?|coverage|specs?",
    "@docs": r"docs?|documentation|readmes?|wikis?|manuals?|guides?",
    "@retry": r"retr(?:y|ies)|attempts?|tries",
    "@timezone": r"time\s?zones?|tz|utc|gmt|local\s+time",
    "@team": r"teams?|squads?|groups?|departments?|org(?:anisation|anization)?",
    "@export": r"exports?|dumps?|backups?|snapshots?|extracts?",
}
_KIND_RES = {
    kind: re.compile(rf"\b(?:{words})\b", re.IGNORECASE)
    for kind, words in _KINDS_OF_SUBJECT.items()
}


# An aside that names what follows is about it: "About the port: use 8081 instead".
# So does one that is a noun phrase: "The serialization library: structlog (was orjson)".
_NAMES_SUBJECT = re.compile(
    r"\b(?:about|regarding|re|on|for|concerning|as\s+for)\b|^(?:the|our|my|your|this|that)\s",
    re.I,
)


@functools.lru_cache(maxsize=8192)
def core(text: str) -> str:
    """What a statement says without how the user leads into it: no lead-ins ("Also -"), no
    short aside that names nothing ("hey,", "not related, but"); its first word's capital
    is then no name ("not related, but Go with …")."""
    aside = split_aside(text)
    # Three words at most: "The commit message prefix has changed, it's …" is no aside.
    short = aside is not None and len(aside[0].split()) <= 3
    if aside is not None and short and not _NAMES_SUBJECT.search(aside[0]):
        text = aside[1]
    return without_lead(text)


_PREFIXES_TEXT = "pre non post anti sub multi re co semi un de mis over under"
_PREFIXES = frozenset(_PREFIXES_TEXT.split())


@functools.lru_cache(maxsize=8192)
def subject_words(text: str) -> frozenset[str]:
    """What a statement is about: its content words (a hyphenated word also by its parts:
    "old-plan" shares "plan"), with "limit" for any way of saying one and a mark for each
    kind of subject it names (`_KINDS_OF_SUBJECT`)."""
    # Lead-ins ("Separately, …", "Before I forget - …") say nothing about the subject.
    words = set(content_words(core(text)) - _UPDATE_WORDS)
    words |= {
        part
        for word in words
        # "pre-prod" is not "prod", nor "non-blocking" "blocking": a prefix makes another thing.
        if "-" in word and word.split("-", 1)[0] not in _PREFIXES
        for part in content_words(word.replace("-", " "))
        if part not in _UPDATE_WORDS
    }
    if _LIMIT.search(text):
        words = {w for w in words if not _LIMIT.fullmatch(w)} | {"limit"}
    return frozenset(words | {kind for kind, found in _KIND_RES.items() if found.search(text)})


@functools.lru_cache(maxsize=4096)
def _shape(value: str) -> str:
    """A value's kind: amount, number with unit, version, code, host, path, name …"""
    if value.startswith("$"):
        return "money"
    if re.fullmatch(r"\d{1,2}:\d{2}", value):
        return "time"
    if re.fullmatch(r"\d+\.\d+(?:\.\d+)*", value):
        return "version"
    if re.fullmatch(r"\d+", value):
        return "number"
    if re.fullmatch(r"[A-Z]{2,}[-_]?\d+", value):
        return "code"
    if "/" in value:
        return "path"
    if re.search(r"\.\w+$", value):
        return "host"
    if re.fullmatch(r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+", value):
        return "name"
    return "word"


# A request whose work is setting a value: "Make the bastion SSH port 4411 instead",
# "set the retry count to 5".
_SETS_A_VALUE = re.compile(
    r"^(?:please\s+)?(?:make|set|change|switch|move|bump|raise|lower|increase|reduce|turn)\b",
    re.IGNORECASE,
)


def sets_a_value(text: str) -> bool:
    """Whether a request asks for nothing but a value set: an imperative of setting that
    carries a value."""
    said = core(text)
    return bool(_SETS_A_VALUE.match(said)) and bool(set_values(said, _UPDATE_WORDS))


def states_new_value(text: str) -> bool:
    """Whether `text` says that something changed and gives the value it is now, in a
    value's form or as a plain word where a value goes, about a named subject."""
    said = core(text)
    return (
        says_change(said)
        and bool(set_values(said, _UPDATE_WORDS))
        and len(content_words(said) - _UPDATE_WORDS) >= 2
    )


def says_change(text: str) -> bool:
    """Whether `text` says that something changed. A cue in the aside counts
    ("Correction: …"), one only made by the aside and what follows does not ("Not
    related, but …" is no "not X but Y")."""
    aside = split_aside(text)
    parts = aside if aside is not None else (text,)
    return any(_UPDATE_CUE.search(part) for part in parts) or bool(_NAMES_WHAT_IT_WAS.search(text))


# A change said by naming what the value was: "the Go version: 4.2 (was 3.11)", "the host
# is b.internal, formerly a.internal", "I got it wrong earlier".
_NAMES_WHAT_IT_WAS = re.compile(
    r"\((?:was|previously|formerly|used\s+to\s+be)\s+[^)]+\)|\bused\s+to\s+be\b|"
    r"\b(?:previously|formerly)\b|\bgot\s+(?:it|that|this)\s+wrong\b|\bi\s+was\s+wrong\b",
    re.IGNORECASE,
)


def _fine_shape(value: str) -> str | None:
    """A value's form, finer than `_shape`: "host .internal", "A-9" for a code, "a:9.9-a"
    for an image tag. None for plain numbers and words, too common to tell one thing by."""
    if re.fullmatch(r"[\d.,]+", value) or value.isalpha():
        return None
    if _shape(value) == "host":
        return "host " + value.rsplit(".", 1)[-1]
    return re.sub(r"[A-Z]+", "A", re.sub(r"[a-z]+", "a", re.sub(r"\d+", "9", value)))


def same_form_values(new: str, old: str) -> bool:
    """Whether `new` brings a value that `old` lacks of a form `old` has (for an update
    that names its subject in words `old` does not use: the form is what is left)."""
    new_values = set(values_in(core(new)))
    old_values = set(values_in(core(main_text(old))))
    fresh = {_fine_shape(v) for v in new_values - old_values} - {None}
    return bool(fresh & {_fine_shape(v) for v in old_values - new_values})


def _kind(value: str) -> str:
    """`_shape`, with the catch-all "word" split by form: an image tag `python:4.2-x` is no
    currency code `NZD`, though both are "words"."""
    shape = _shape(value)
    return shape if shape != "word" else f"word {_fine_shape(value)}"


def _abbreviated(new_words: set[str], old_words: set[str]) -> set[str]:
    """Words one statement shortens from the other's ("prod" for "production", "config"
    for "configuration", "doc" for "documentation"): four letters at least, so "log" is no
    "login", or three of a word of eight letters or more."""
    return {
        short
        for short in new_words | old_words
        if len(short) >= 3 and not short.startswith("@")
        for other in (old_words if short in new_words else new_words)
        if other != short and other.startswith(short) and (len(short) >= 4 or len(other) >= 8)
    }


# Words that set the old value aside when the update names it.
_DISMISSES = re.compile(
    r"\b(?:ignore|disregard|forget|scrap|drop|not|instead\s+of|rather\s+than|no\s+longer)\b",
    re.IGNORECASE,
)


def _names_plainly(new: str, old: str, old_values: set[str]) -> bool:
    """Whether `new` sets aside, named as a plain word, a value `old` gave quoted
    ("`tenacity`"): named after "ignore the", "not" …, not as the new value."""
    quoted = {v for v in old_values if re.search(rf"[`\"']{re.escape(v)}[`\"']", old)}
    aside = {v.casefold() for v in set_aside_values(new)}
    return any(len(v) >= 4 and v.casefold() in aside for v in quoted)


def _name_words(values: set[str]) -> set[str]:
    # Two letters are a name too ("Go 3.11" and "the Go version"): values hold no "It".
    return {w.casefold() for v in values for w in v.split() if re.fullmatch(r"[A-Z][a-z]{1,}", w)}


def supersedes(new: str, old: str, said_in: Mapping[str, int] | None = None) -> float:
    """How surely statement `new` changes the value that earlier statement `old` states:
    0 when it does not, higher for a closer match. `said_in` counts, per subject word, the
    earlier statements that use it: a word many of them share (the user's habitual "not
    related, but", "quick note") tells one from another less than a rare one."""
    # Every way to supersede needs a change word; checked first, it spares the value
    # reading of every (new, old) pair of a long session.
    cue = says_change(new)
    if not cue:
        return 0.0
    old_main = main_text(old)
    # Values read without the lead-ins: "btw Change of plan …" capitalises no value. A
    # plain word where an update puts its value ("the mocking library has changed —
    # respx") is one too.
    new_values = set(set_values(core(new), _UPDATE_WORDS))
    old_values = set(values_in(core(old_main)))
    if old_values and _DISMISSES.search(new) and _names_plainly(new, old_main, old_values):
        # "Ignore the tenacity I gave you; the log library is polars": it names the old
        # value (quoted when it was given, plain now) and sets it aside.
        return NAMES_OLD_VALUE
    if not new_values or not old_values:
        return 0.0
    aside = {v.casefold() for v in set_aside_values(core(new))}
    if aside and not aside & {v.casefold().rstrip(".,;:") for v in old_values}:
        # It names the value it sets aside ("…, not attrs"): only an item stating that
        # value is the one it changes.
        return 0.0
    fresh = new_values - old_values
    gone = old_values - new_values
    if not fresh:
        return 0.0
    new_words = set(subject_words(new))
    # An item that replaced an earlier one names its subject either way: "the overnight
    # dump starts = 06:15" after "The nightly export kicks off at 04:45". Each wording is
    # matched apart, the closer one counting: both together would outweigh an item said
    # once in the same words.
    earlier = replaced_text(old)
    wordings = [set(subject_words(old_main))] + ([set(subject_words(earlier))] if earlier else [])
    # A proper name both mention ("the Redis cache", "the Redis host") is what both are
    # about, not a value either changes: it counts as a shared subject word. An acronym
    # ("the API", "CI") is too generic to tell one item by.
    # By word: "Minimum Postgres is 15" reads "Minimum Postgres" as one name.
    names = _name_words(old_values) & _name_words(new_values)

    def shared_with(old_words: set[str]) -> set[str]:
        return new_words & old_words | names | _abbreviated(new_words, old_words)

    old_words = max(wordings, key=lambda words: len(shared_with(words)))
    shared = shared_with(old_words)
    coverage = len(shared) / max(1, min(len(new_words), len(old_words)))
    set_aside = {v for v in old_values if v.casefold().rstrip(".,;:") in aside}
    if set_aside and {_kind(v) for v in fresh} & {_kind(v) for v in set_aside}:
        # "The currency I read amounts in is no longer CHF — it's JPY": it sets aside a
        # value this item states, for one of its kind (a word like CHF counts here); of
        # two items stating it, the one sharing more of its words.
        return NAMES_OLD_VALUE + coverage
    fresh_shapes = {_shape(v) for v in fresh}
    named = [v for v in old_values & new_values if not v.isalpha()]
    if any(_shape(v) in fresh_shapes for v in named):
        # It names the old value and gives a new one of its kind: "use 8081 instead of
        # 8080". A word both mention ("the API", a capitalised "Quick") is no old value.
        return NAMES_OLD_VALUE + coverage
    # Otherwise it must drop an old value for a new one of the same shape ...
    if not gone or not {_kind(v) for v in fresh} & {_kind(v) for v in gone}:
        return 0.0
    # ... say it is a change ("never touch a.py" and then "never touch b.py" are two rules,
    # not one replacing the other) and be about the same thing. A user names the thing in
    # other words the second time ("the allowed email domain" for "email anyone outside
    # x.example"): one shared subject word is enough, and the closest match wins.
    if cue and shared:
        # More shared subject words beat a short earlier item that shares one ("the host
        # that needs two replicas" is the replicas rule, not "the Redis host").
        # A kind of subject both name ("the host" / "lives on") is weaker evidence than a
        # word both use: it counts half.
        counts = said_in or {}
        # A word shared by one earlier statement weighs 1, by four of them a quarter; kinds
        # of subject ("@place") weigh half as much.
        weight = sum((0.5 if w.startswith("@") else 1.0) / max(1, counts.get(w, 1)) for w in shared)
        # A value of the very same form (`.example` for `.example`, not `.internal`) breaks
        # a tie between two items sharing as many words.
        same_form = bool({_fine_shape(v) for v in fresh} & {_fine_shape(v) for v in gone} - {None})
        return 1.0 + weight + coverage / 2 + same_form / 4
    return 0.0
