"""Canary sessions for bench/fidelity.py: facts a user states once, buried in long work.

Five kinds (safety rule, constraint, fact, goal, preference), each written from templates in
several phrasings: imperative, declarative, third person, prohibitions, limits, a rule split
over two sentences from its value, a question that asks for work. Values are random per seed
(codes, ports, amounts, hosts, identifiers), so no check can pass by accident. Some canaries
are updated later ("Correction: … is now …"); then the new value must be kept and the old
one must not be presented as current.

Three template sets. DEV and DEV_B were used while building the summarizer (DEV_B was
first written as a held-out set, but its update wordings were seen during development, so
it counts as development material). HELD_OUT was written afterwards and first run for the
report; its failures were then read and fixed (lead-ins such as "Before I forget -", "we
need a …", "I find … easiest", "ignore what I said about …" updates), so it is development
material too. HELD_OUT_2 was written after those fixes and run once for the report (its
phrasings, subjects, update wordings, message wraps, filler, tool-output noise and seeds
differ from all three); its failures were read and fixed afterwards, so it is development
material now as well. HELD_OUT_3 and HELD_OUT_3_FINAL (issue 24) were written without
reading the summarizer's cue lists and run before any fix; HELD_OUT_3's failures were then
read and fixed, HELD_OUT_3_FINAL's never were: it is the held-out figure. HELD_OUT_4 and
HELD_OUT_4_FINAL (issue 24, second pass) were written together before any summary of them
was read, with new domains, constraints said as plain statements of a limit, plain-statement
goals and updates naming their subject in other words, planted over rounds 1-4; both were
run before any fix, then only HELD_OUT_4's failures were read. HELD_OUT_4_FINAL was run once
more at the end; its phrasings were written by the same hand as HELD_OUT_4's, so it is held
out from the fixes, not from the author. The third pass of issue 24 read HELD_OUT_3's and
HELD_OUT_4's failures again; the _FINAL sets stayed unread (bench/fidelity_phrasings.py
holds the sentence lists that pass was developed and checked with). The fourth pass wrote
DEV_C and HELD_OUT_5 together, before any summary of either was read: DEV_C's failures were
read (development material), HELD_OUT_5's never were; it is run once, at the end. DEV_D
was written after DEV_C's fixes, to find more ways an update is missed (development).
Sessions come in three shapes: Chat Completions tool calls, Anthropic
tool_use blocks, and a text-action agent whose tool output arrives as `user` messages.
Tool output carries rule-like lines with NOISE tokens: they must never reach a summary's
Goal or Constraints.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass, field
from typing import Any

KINDS = ("safety rule", "constraint", "fact", "goal", "preference")
PER_KIND = 4
ROUNDS = 5


@dataclass(frozen=True, slots=True)
class Template:
    """One phrasing: `text` with {slots}; `checks` must all appear in one summary item."""

    style: str
    text: str
    checks: tuple[str, ...]
    # How an update names the thing (None: this canary is never updated).
    subject: str | None = None
    # The slot an update replaces.
    slot: str | None = None


@dataclass(frozen=True, slots=True)
class Update:
    """A later message that changes the canary's value; `checks` hold the new value."""

    text: str
    checks: tuple[str, ...]
    old_value: str


@dataclass(frozen=True, slots=True)
class Canary:
    kind: str
    style: str
    text: str
    checks: tuple[str, ...]
    update: Update | None = None


# Values: random but realistic, so a check finds them only where the canary put them.
_WORDS = [
    "amber",
    "cobalt",
    "delta",
    "ember",
    "falcon",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lumen",
    "marlin",
    "nebula",
    "onyx",
    "pylon",
    "quartz",
    "raven",
    "saffron",
    "tundra",
    "umber",
    "vesper",
    "willow",
    "yonder",
    "zephyr",
    "basalt",
    "cinder",
    "dune",
    "fjord",
    "glacier",
    "heron",
    "iris",
    "jasper",
    "krill",
    "lotus",
    "mesa",
    "nimbus",
    "orchid",
]
_NAMES = ("Ada Quint", "Bo Lindqvist", "Chidi Okafor", "Dana Vrabel", "Emeka Hale", "Farah Noor")
_LIBS = ("httpx", "polars", "attrs", "structlog", "orjson", "tenacity", "respx", "hypothesis")
_VERSIONS = ("3.11", "3.10", "3.12", "2.7", "1.24", "4.2")
_CURRENCIES = ("EUR", "CHF", "SEK", "NZD", "JPY")


def _values(rng: random.Random) -> dict[str, str]:
    word = rng.choice(_WORDS)
    other = rng.choice([w for w in _WORDS if w != word])
    letters = "".join(rng.choice(string.ascii_uppercase) for _ in range(4))
    zone = "".join(rng.choice(string.ascii_lowercase) for _ in range(4))
    return {
        "code": f"{letters}-{rng.randint(100, 999)}",
        "port": str(rng.randint(2000, 9999)),
        "money": f"${rng.randint(3, 95) * 100}",
        "host": f"{word}-{rng.randint(2, 40)}.internal",
        "path": f"data/{word}_{rng.randint(10, 99)}/",
        "ident": f"{word}_{other}",
        "zone": f"Zone/{zone.capitalize()}",
        "ver": rng.choice(_VERSIONS),
        "n": str(rng.randint(3, 90)),
        "name": rng.choice(_NAMES),
        "lib": rng.choice(_LIBS),
        "word": word.capitalize() + str(rng.randint(2, 9)),
        "image": f"python:{rng.choice(_VERSIONS)}-{word}",
        "env": f"{word}{rng.randint(2, 9)}",
        "prefix": f"{word[:3]}{rng.randint(10, 99)}",
        "currency": rng.choice(_CURRENCIES),
        "time": f"{rng.randint(0, 23):02d}:{rng.choice(('00', '15', '30', '45'))}",
        "domain": f"{word}{rng.randint(2, 9)}.example",
        "module": f"{word}_{rng.randint(2, 9)}",
    }


def _t(style: str, text: str, *checks: str, subject: str | None = None, slot: str | None = None):
    return Template(style, text, checks, subject, slot)


DEV: dict[str, tuple[Template, ...]] = {
    "safety rule": (
        _t(
            "prohibition",
            "Under no circumstances reveal the maintenance access code {code}.",
            "{code}",
            "reveal",
        ),
        _t(
            "imperative",
            "Never run database migrations against {host} without asking me first.",
            "{host}",
            "never run",
            subject="the migrations database host",
            slot="host",
        ),
        _t(
            "third person",
            "The user does not allow any deletion under `{path}`.",
            "{path}",
            "deletion",
        ),
        _t(
            "split value",
            "Production is {env}. Never deploy there on a Friday.",
            "{env}",
            "never deploy",
            subject="production",
            slot="env",
        ),
        _t("imperative", "Do not touch the billing database at {host}.", "{host}", "do not touch"),
        _t(
            "declarative",
            "The signing key {code} is confidential and must not be shared.",
            "{code}",
            "must not be shared",
        ),
    ),
    "constraint": (
        _t(
            "split value",
            "Budget cap is {money} total. Never exceed without explicit approval.",
            "{money}",
            "never exceed",
            subject="the budget cap",
            slot="money",
        ),
        _t(
            "fragment",
            "Only Python {ver}. No external network access.",
            "python {ver}",
            "no external network",
        ),
        _t(
            "imperative",
            "Report all times in {zone} timezone.",
            "{zone}",
            "report all times",
            subject="the reporting timezone",
            slot="zone",
        ),
        _t("elliptical", "Cannot use any existing {word} frameworks.", "{word}", "cannot use"),
        _t(
            "limit",
            "Responses must be at most {n} lines long.",
            "{n} lines",
            "at most",
            subject="the response length limit",
            slot="n",
        ),
        _t(
            "imperative",
            "Keep the public signature of `{ident}()` unchanged.",
            "{ident}",
            "unchanged",
        ),
    ),
    "fact": (
        _t(
            "declarative",
            "The staging database listens on port {port}.",
            "{port}",
            "staging database",
            subject="the staging database port",
            slot="port",
        ),
        _t("aside", "FYI, the CI runner image is `{image}`.", "{image}", "runner image"),
        _t(
            "declarative",
            "Our customer's account ID is {code}.",
            "{code}",
            "account id",
            subject="the customer's account ID",
            slot="code",
        ),
        _t(
            "declarative",
            "The deploy host is {host}.",
            "{host}",
            "deploy host",
            subject="the deploy host",
            slot="host",
        ),
        _t("declarative", "The project codename is {word}.", "{word}", "codename"),
        _t(
            "declarative", "{name} is the maintainer of the payments service.", "{name}", "payments"
        ),
    ),
    "goal": (
        _t(
            "imperative",
            "Add a `{ident}` command to the CLI that exports invoices as CSV.",
            "{ident}",
            "export",
        ),
        _t(
            "polite",
            "Please build a dashboard page at `/{module}` showing weekly signups.",
            "/{module}",
            "dashboard",
        ),
        _t(
            "next task",
            "Next task: write a migration that adds the `{ident}` column.",
            "{ident}",
            "migration",
        ),
        _t(
            "first person",
            "I need you to fix the flaky test `test_{ident}`.",
            "test_{ident}",
            "flaky",
        ),
    ),
    "preference": (
        _t(
            "third person",
            "User prefers terse answers, at most {n} sentences.",
            "terse",
            "{n} sentences",
            subject="the answer length",
            slot="n",
        ),
        _t(
            "first person",
            "I like commit messages that start with `{prefix}:`.",
            "{prefix}",
            "commit messages",
        ),
        _t(
            "first person",
            "I'd rather you use `{lib}` than requests for HTTP calls.",
            "{lib}",
            "rather",
        ),
        _t("polite", "Please use tabs, not spaces, in `{module}.mk`.", "{module}.mk", "tabs"),
        _t(
            "preference",
            "My preferred log format is `{ident}` JSON lines.",
            "{ident}",
            "log format",
            subject="the log format",
            slot="ident",
        ),
    ),
}

DEV_B: dict[str, tuple[Template, ...]] = {
    "safety rule": (
        _t("imperative", "Whatever happens, keep `{path}` read-only.", "{path}", "read-only"),
        _t(
            "permission",
            "You are not permitted to email anyone outside {domain}.",
            "{domain}",
            "not permitted",
            subject="the allowed email domain",
            slot="domain",
        ),
        _t(
            "third person",
            "Our security team forbids sharing the vault PIN {code}.",
            "{code}",
            "forbids",
        ),
        _t(
            "split value",
            "{code} is the recovery phrase. It must never appear in any output.",
            "{code}",
            "never appear",
        ),
        _t(
            "imperative",
            "Refrain from restarting {host} during business hours.",
            "{host}",
            "refrain",
            subject="the host that must not be restarted",
            slot="host",
        ),
        _t(
            "third person",
            "The client insists that nobody force-pushes to `{env}`.",
            "{env}",
            "force-push",
        ),
    ),
    "constraint": (
        _t(
            "limit",
            "The whole job has to finish within {n} minutes.",
            "{n} minutes",
            "finish within",
            subject="the time limit for the job",
            slot="n",
        ),
        _t(
            "limit",
            "We're limited to {n} GB of RAM on the build box.",
            "{n} gb",
            "limited to",
            subject="the RAM limit on the build box",
            slot="n",
        ),
        _t("imperative", "Stick with {lib} version {ver} for now.", "{lib}", "{ver}"),
        _t(
            "declarative",
            "All prices go out in {currency}, rounded to two decimals.",
            "{currency}",
            "rounded",
            subject="the currency for prices",
            slot="currency",
        ),
        _t(
            "fragment",
            "No more than {n} concurrent connections to {host}.",
            "{n} concurrent",
            "{host}",
        ),
        _t(
            "requirement",
            "Requirement: every endpoint returns JSON with a `{ident}` field.",
            "{ident}",
            "requirement",
        ),
    ),
    "fact": (
        _t(
            "aside",
            "For reference, the on-call engineer this week is {name}.",
            "{name}",
            "on-call",
            subject="the on-call engineer",
            slot="name",
        ),
        _t("declarative", "Logs end up in `{path}` on each node.", "{path}", "logs"),
        _t(
            "declarative",
            "The nightly export runs at {time} UTC.",
            "{time}",
            "nightly export",
            subject="the nightly export time",
            slot="time",
        ),
        _t(
            "declarative",
            "We moved the job queue to {host} last month.",
            "{host}",
            "queue",
            subject="the job queue host",
            slot="host",
        ),
        _t("declarative", "Ticket {code} tracks the outage from Tuesday.", "{code}", "outage"),
        _t(
            "declarative",
            "The metrics endpoint is served on port {port}.",
            "{port}",
            "metrics endpoint",
            subject="the metrics port",
            slot="port",
        ),
    ),
    "goal": (
        _t(
            "question",
            "Can you port `{ident}` from the old service to the new one?",
            "{ident}",
            "port",
        ),
        _t("declarative", "The goal today is to get `{ident}` under 200 ms.", "{ident}", "200 ms"),
        _t(
            "change",
            "Let's switch focus to cleaning up the `{module}` module.",
            "{module}",
            "clean",
        ),
        _t("job", "Your job: make `{ident}` work on Windows.", "{ident}", "windows"),
    ),
    "preference": (
        _t(
            "preference",
            "My preference: dates written as {ident} everywhere.",
            "{ident}",
            "dates",
            subject="the date style",
            slot="ident",
        ),
        _t("third person", "The team likes `{lib}` for HTTP mocks.", "{lib}", "http mocks"),
        _t(
            "hedged",
            "Ideally, keep each function under {n} lines.",
            "{n} lines",
            "function",
            subject="the function length",
            slot="n",
        ),
        _t(
            "imperative",
            "Favor small commits and label them `{prefix}-<n>`.",
            "{prefix}",
            "commits",
        ),
        _t(
            "first person",
            "I want variable names in British spelling, like `{ident}`.",
            "{ident}",
            "british",
        ),
    ),
}

DEV_UPDATES = (
    "Correction: {subject} is now {new}.",
    "Update: use {new} instead of {old} for {subject}.",
    "Change of plan: {subject} changed to {new}.",
)
DEV_B_UPDATES = (
    "Scratch that, {subject} should be {new}.",
    "Heads up: from now on {subject} is {new}.",
    "{subject_cap} moved to {new} as of today.",
)

# Written before the last round of changes and never used to tune them.
HELD_OUT: dict[str, tuple[Template, ...]] = {
    "safety rule": (
        _t("imperative", "Please never print the API token {code} in logs.", "{code}", "never"),
        _t(
            "declarative",
            "It is strictly forbidden to push to `{env}` directly.",
            "{env}",
            "forbidden",
            subject="the protected branch",
            slot="env",
        ),
        _t(
            "third person",
            "{name} asked that nobody runs `rm -rf` inside `{path}`.",
            "{path}",
            "rm -rf",
        ),
        _t(
            "imperative",
            "Keep the staging credentials ({code}) out of every commit.",
            "{code}",
            "out of every commit",
        ),
        _t(
            "imperative",
            "Don't ever scale {host} below two replicas.",
            "{host}",
            "two replicas",
            subject="the host that needs two replicas",
            slot="host",
        ),
        _t(
            "split value",
            "The kill switch lives at `{path}`. Leave it alone no matter what.",
            "{path}",
            "leave it alone",
        ),
    ),
    "constraint": (
        _t(
            "requirement",
            "Any new dependency needs to support Python {ver}.",
            "python {ver}",
            "dependency",
            subject="the minimum Python version",
            slot="ver",
        ),
        _t(
            "limit",
            "Memory usage must stay below {n} MB.",
            "{n} mb",
            "below",
            subject="the memory ceiling",
            slot="n",
        ),
        _t(
            "limit",
            "We can only deploy between {time} and midnight.",
            "{time}",
            "deploy",
            subject="the start of the deploy window",
            slot="time",
        ),
        _t(
            "declarative",
            "All API calls go through the proxy at {host}.",
            "{host}",
            "proxy",
            subject="the proxy host",
            slot="host",
        ),
        _t(
            "fragment",
            "Tests have to run offline, no calls to {domain}.",
            "{domain}",
            "offline",
        ),
        _t("imperative", "Stay on `{image}` as the base image.", "{image}", "base image"),
    ),
    "fact": (
        _t(
            "aside",
            "Heads-up: the Redis cache sits at {host}.",
            "{host}",
            "redis",
            subject="the Redis host",
            slot="host",
        ),
        _t(
            "declarative",
            "The invoice service exposes gRPC on port {port}.",
            "{port}",
            "grpc",
            subject="the gRPC port",
            slot="port",
        ),
        _t(
            "declarative",
            "{name} owns the release process.",
            "{name}",
            "release",
            subject="the release owner",
            slot="name",
        ),
        _t(
            "declarative",
            "The feature flag for the beta is called `{ident}`.",
            "{ident}",
            "feature flag",
        ),
        _t(
            "declarative",
            "Backups are stored under `{path}`.",
            "{path}",
            "backups",
            subject="the backup folder",
            slot="path",
        ),
        _t("declarative", "The last good build was tagged {code}.", "{code}", "last good build"),
    ),
    "goal": (
        _t("question", "Could you make the `{ident}` report load faster?", "{ident}", "faster"),
        _t("declarative", "Today's task is adding retries to `{module}`.", "{module}", "retries"),
        _t(
            "need",
            "We need a health check endpoint in `{module}` that reports queue depth.",
            "{module}",
            "health check",
        ),
        _t("request", "New request: rename `{ident}` across the codebase.", "{ident}", "rename"),
        _t("help", "Help me write the docs for `{ident}`.", "{ident}", "docs"),
    ),
    "preference": (
        _t(
            "first person",
            "Personally I find one-line docstrings easiest to read in `{module}`.",
            "{module}",
            "one-line docstrings",
        ),
        _t(
            "third person",
            "The user would like progress updates every {n} steps.",
            "{n} steps",
            "progress",
            subject="the progress update interval",
            slot="n",
        ),
        _t("hedged", "If possible, write the tests with `{lib}`.", "{lib}", "tests"),
        _t(
            "imperative",
            "Go with snake_case names such as `{ident}`.",
            "{ident}",
            "snake_case",
        ),
        _t(
            "polite",
            "We'd appreciate it if answers used {currency} for costs.",
            "{currency}",
            "costs",
            subject="the currency for costs",
            slot="currency",
        ),
    ),
}
HELD_OUT_UPDATES = (
    "Small change: {subject} is {new} from here on.",
    "Ignore what I said earlier about {subject}; it's {new}.",
    "Following up on {subject}: please use {new}.",
)
# Written last, after the fixes that HELD_OUT's failures led to (so HELD_OUT is
# development material now), and run once for the report.
HELD_OUT_2: dict[str, tuple[Template, ...]] = {
    "safety rule": (
        _t(
            "imperative",
            "Do not drop any table in the `{env}` database.",
            "{env}",
            "drop",
            subject="the database nobody may drop tables in",
            slot="env",
        ),
        _t(
            "declarative",
            "Running migrations against {host} is off limits.",
            "{host}",
            "migrations",
            subject="the host where migrations are off limits",
            slot="host",
        ),
        _t(
            "third person",
            "Security says the signing key {code} must never leave the vault.",
            "{code}",
            "vault",
        ),
        _t("prohibition", "Under no circumstances email {domain} customers.", "{domain}", "email"),
        _t(
            "split value",
            "The admin panel is at `{path}`. Nobody outside ops touches it.",
            "{path}",
            "nobody outside ops",
        ),
        _t("imperative", "Refrain from force-pushing to `{env}`.", "{env}", "force-pushing"),
    ),
    "constraint": (
        _t(
            "limit",
            "Responses are capped at {n} lines.",
            "{n} lines",
            "capped",
            subject="the line cap for responses",
            slot="n",
        ),
        _t(
            "requirement",
            "Everything you write has to work on Python {ver}.",
            "python {ver}",
            "has to work",
        ),
        _t(
            "limit",
            "Spend no more than {money} on cloud resources this month.",
            "{money}",
            "cloud",
            subject="the cloud spend limit",
            slot="money",
        ),
        _t("fragment", "Only stdlib plus `{lib}` as dependencies.", "{lib}", "stdlib"),
        _t(
            "declarative",
            "The service must listen on port {port}.",
            "{port}",
            "listen",
            subject="the listening port",
            slot="port",
        ),
        _t("time", "Timestamps are always in {zone}.", "{zone}", "timestamps"),
    ),
    "fact": (
        _t(
            "declarative",
            "Our staging cluster is reachable at {host}.",
            "{host}",
            "staging",
            subject="the staging cluster address",
            slot="host",
        ),
        _t(
            "aside",
            "For context, the on-call engineer this week is {name}.",
            "{name}",
            "on-call",
            subject="this week's on-call engineer",
            slot="name",
        ),
        _t("declarative", "The nightly job writes its output to `{path}`.", "{path}", "nightly"),
        _t(
            "declarative",
            "Customer ids look like {code}.",
            "{code}",
            "customer ids",
        ),
        _t(
            "declarative",
            "The metrics endpoint answers on port {port}.",
            "{port}",
            "metrics",
            subject="the metrics port",
            slot="port",
        ),
    ),
    "goal": (
        _t(
            "request",
            "I'd like you to add pagination to the `{ident}` listing.",
            "{ident}",
            "pagination",
        ),
        _t("imperative", "Port `{module}` from callbacks to async/await.", "{module}", "async"),
        _t("question", "Can you find out why `{ident}` leaks memory?", "{ident}", "leaks memory"),
        _t("framed", "The objective now: make `{module}` thread-safe.", "{module}", "thread-safe"),
        _t("need", "What I need is a CSV export for `{ident}`.", "{ident}", "csv export"),
    ),
    "preference": (
        _t(
            "first person",
            "I'm more comfortable reviewing small commits, ideally under {n} files each.",
            "{n} files",
            "small commits",
            subject="the commit size",
            slot="n",
        ),
        _t("third person", "The team leans towards `{lib}` for HTTP mocking.", "{lib}", "mocking"),
        _t(
            "hedged",
            "It would be nice if log messages started with `{prefix}`.",
            "{prefix}",
            "log messages",
        ),
        _t(
            "third person",
            "{name} likes type hints on every public function.",
            "{name}",
            "type hints",
        ),
        _t(
            "imperative",
            "Favour dataclasses over dicts in `{module}`.",
            "{module}",
            "dataclasses",
        ),
    ),
}
HELD_OUT_2_UPDATES = (
    "Heads up, {subject} changed: it is {new} now.",
    "Update on {subject}: {new}, not {old}.",
    "My mistake earlier - {subject} should be {new}.",
)
# Written for issue 24 without reading the summarizer's cue lists, from phrasings real users
# write. HELD_OUT_3 was run once before any fix (the honest figure in the README) and its
# failures were read for the general fixes after it; HELD_OUT_3_FINAL was written at the same
# time, run before and after, and never read: it is the check that the fixes are not
# tuned to HELD_OUT_3's words.
HELD_OUT_3: dict[str, tuple[Template, ...]] = {
    "safety rule": (
        _t(
            "lead-in",
            "Whatever you do, don't restart {host} during business hours.",
            "{host}",
            "restart",
            subject="the machine that must stay up during the day",
            slot="host",
        ),
        _t(
            "prohibition",
            "Under no circumstances should the password {code} appear in a commit.",
            "{code}",
            "commit",
        ),
        _t(
            "colloquial",
            "Keep your hands off `{path}` - that's customer data.",
            "{path}",
            "hands off",
        ),
        _t(
            "declarative",
            "It is forbidden to disable TLS verification for {domain}.",
            "{domain}",
            "tls",
        ),
        _t(
            "polite",
            "Please make sure nothing ever gets written to the `{env}` bucket.",
            "{env}",
            "written",
            subject="the write-protected bucket",
            slot="env",
        ),
        _t(
            "third person",
            "Legal asked us not to log email addresses of {domain} users.",
            "{domain}",
            "email addresses",
        ),
        _t(
            "declarative",
            "The `{ident}` table is read-only for you; no UPDATE or DELETE statements.",
            "{ident}",
            "read-only",
        ),
        _t(
            "imperative",
            "Don't ever share {code} with anyone, it's the root recovery key.",
            "{code}",
            "share",
        ),
        _t(
            "split value",
            "Rule of thumb here: no deploys to {env} after {time}.",
            "{env}",
            "{time}",
            subject="the cutoff for deploys",
            slot="time",
        ),
        _t("imperative", "Avoid running `rm -rf` anywhere near `{path}`.", "{path}", "rm -rf"),
    ),
    "constraint": (
        _t(
            "requirement",
            "The whole thing needs to fit in {n} MB of RAM.",
            "{n} mb",
            "ram",
            subject="the memory budget",
            slot="n",
        ),
        _t(
            "declarative",
            "We're stuck on {lib} {ver}, upgrading isn't an option.",
            "{lib} {ver}",
            "upgrad",
        ),
        _t(
            "limit",
            "Requests to {domain} are rate limited to {n} per minute, so batch them.",
            "{domain}",
            "{n} per minute",
            subject="how many calls a minute the remote API accepts",
            slot="n",
        ),
        _t("limit", "Total run time must stay below {n} minutes on CI.", "{n} minutes", "ci"),
        _t(
            "split value",
            "All amounts are in {currency}. Never mix currencies.",
            "{currency}",
            "amounts",
            subject="the money unit",
            slot="currency",
        ),
        _t("prohibition", "No GPL code can go into `{module}`.", "{module}", "gpl"),
        _t(
            "fragment",
            "Target is the {image} container image, nothing newer.",
            "{image}",
            "image",
            subject="the base container",
            slot="image",
        ),
        _t("declarative", "It has to run offline - {host} has no internet.", "{host}", "offline"),
        _t(
            "third person",
            "The DBA says max {n} concurrent connections to the database.",
            "{n} concurrent",
            "connections",
        ),
        _t(
            "imperative",
            "Keep the public API of `{module}` backwards compatible.",
            "{module}",
            "backwards compatible",
        ),
    ),
    "fact": (
        _t(
            "declarative",
            "The build server lives at {host}.",
            "{host}",
            "build server",
            subject="the CI machine",
            slot="host",
        ),
        _t(
            "declarative",
            "{name} owns the payments service, ask them about anything there.",
            "{name}",
            "payments",
            subject="whoever is responsible for billing code",
            slot="name",
        ),
        _t(
            "declarative",
            "Our feature flags live in `{path}`.",
            "{path}",
            "feature flags",
            subject="where toggles are stored",
            slot="path",
        ),
        _t(
            "declarative",
            "The release branch for this sprint is `{env}`.",
            "{env}",
            "release branch",
            subject="the branch we ship from",
            slot="env",
        ),
        _t(
            "aside",
            "FYI the Redis instance listens on {port}.",
            "{port}",
            "redis",
            subject="the cache's port",
            slot="port",
        ),
        _t(
            "number",
            "We have {n} customers on the legacy plan.",
            "{n} customers",
            "legacy",
            subject="the count of old-plan accounts",
            slot="n",
        ),
        _t(
            "declarative",
            "The deploy token is stored as {code} in the vault.",
            "{code}",
            "deploy token",
        ),
        _t(
            "declarative",
            "The vendor's sandbox is {domain}.",
            "{domain}",
            "sandbox",
            subject="the supplier's test environment",
            slot="domain",
        ),
        _t(
            "schedule",
            "Standup is at {time} every day.",
            "{time}",
            "standup",
            subject="the daily meeting",
            slot="time",
        ),
        _t(
            "history",
            "The old importer was written by {name} and nobody has touched it since.",
            "{name}",
            "importer",
        ),
    ),
    "goal": (
        _t(
            "want",
            "I want the `{module}` parser to handle empty files without crashing.",
            "{module}",
            "empty files",
        ),
        _t(
            "next up",
            "Next up: rename `{ident}` to something readable across the codebase.",
            "{ident}",
            "rename",
        ),
        _t(
            "framed",
            "The task is to get `{module}` under {n} ms per request.",
            "{module}",
            "{n} ms",
        ),
        _t(
            "question",
            "Can you wire `{ident}` into the admin dashboard?",
            "{ident}",
            "admin dashboard",
        ),
        _t(
            "need",
            "We need to migrate `{module}` off the deprecated client.",
            "{module}",
            "migrate",
        ),
        _t(
            "framed",
            "Your job now is writing integration tests for `{ident}`.",
            "{ident}",
            "integration tests",
        ),
        _t(
            "polite",
            "Please get rid of the flaky retry logic in `{module}`.",
            "{module}",
            "retry logic",
        ),
        _t("framed", "Goal for today: ship the `{ident}` webhook.", "{ident}", "webhook"),
        _t(
            "let's",
            "Let's make `{module}` return proper 404s instead of 500s.",
            "{module}",
            "404",
        ),
        _t("suggestion", "How about you add caching to `{ident}` lookups?", "{ident}", "caching"),
    ),
    "preference": (
        _t("rather", "I'd rather you used `{lib}` than rolling our own.", "{lib}", "rather"),
        _t(
            "polite",
            "Please keep functions under {n} lines.",
            "{n} lines",
            "functions",
            subject="the function length limit",
            slot="n",
        ),
        _t("contrast", "Use tabs, not spaces, in `{module}`.", "{module}", "tabs"),
        _t(
            "third person",
            "The user prefers amounts shown in {currency} with two decimals.",
            "{currency}",
            "two decimals",
            subject="the display currency",
            slot="currency",
        ),
        _t(
            "first person",
            "My preference is short commit messages prefixed with `{prefix}`.",
            "{prefix}",
            "commit messages",
            subject="the commit message prefix",
            slot="prefix",
        ),
        _t(
            "third person",
            "{name} hates long docstrings, keep them to one line.",
            "{name}",
            "docstrings",
        ),
        _t("first person", "Personally I like `{lib}` for fixtures.", "{lib}", "fixtures"),
        _t(
            "hedged",
            "If possible, name branches after the ticket, like `{prefix}-fix`.",
            "{prefix}-fix",
            "branches",
        ),
        _t(
            "imperative",
            "Prefer early returns over nested ifs in `{module}`.",
            "{module}",
            "early returns",
        ),
        _t(
            "contrast",
            "Go with plain asserts rather than `{lib}` matchers.",
            "{lib}",
            "plain asserts",
        ),
    ),
}
HELD_OUT_3_UPDATES = (
    "Actually, {subject} is {new} now, forget {old}.",
    "Quick correction regarding {subject}: it's {new}.",
    "{subject_cap} has changed, it's {new} going forward.",
    "Turns out {subject} is {new}, not what I told you.",
)
HELD_OUT_3_FINAL: dict[str, tuple[Template, ...]] = {
    "safety rule": (
        _t("emphatic", "Never, ever touch the `{env}` cluster's DNS records.", "{env}", "dns"),
        _t(
            "imperative",
            "Don't push anything to `{ident}` without a review.",
            "{ident}",
            "review",
            subject="the branch that needs a reviewer",
            slot="ident",
        ),
        _t(
            "declarative",
            "You are not allowed to call the {domain} production API.",
            "{domain}",
            "not allowed",
        ),
        _t(
            "policy",
            "Security policy: secrets like {code} stay out of the chat.",
            "{code}",
            "secrets",
        ),
        _t(
            "split value",
            "Be careful: `{path}` holds the only backup. Do not modify it.",
            "{path}",
            "backup",
        ),
        _t("declarative", "Nobody gets sudo on {host}, including you.", "{host}", "sudo"),
    ),
    "constraint": (
        _t(
            "split value",
            "Memory ceiling is {n} GB. Going over kills the pod.",
            "{n} gb",
            "memory",
            subject="the pod's RAM ceiling",
            slot="n",
        ),
        _t(
            "requirement",
            "It must build with Python {ver} and nothing else.",
            "python {ver}",
            "build",
        ),
        _t(
            "fragment",
            "Only dependencies already in the lockfile, plus `{lib}` if really needed.",
            "{lib}",
            "lockfile",
        ),
        _t(
            "limit",
            "Responses from the API must come back within {n} ms.",
            "{n} ms",
            "responses",
            subject="the latency limit",
            slot="n",
        ),
        _t("time", "Dates go out in {zone} no matter where the user is.", "{zone}", "dates"),
        _t("limit", "The bundle can't exceed {n} KB gzipped.", "{n} kb", "bundle"),
    ),
    "fact": (
        _t(
            "declarative",
            "Prod logs are shipped to {host}.",
            "{host}",
            "logs",
            subject="where production logging ends up",
            slot="host",
        ),
        _t(
            "declarative",
            "Ticket numbers start with {prefix}.",
            "{prefix}",
            "ticket",
            subject="the issue tracker's prefix",
            slot="prefix",
        ),
        _t(
            "declarative",
            "{name} is the product manager for this.",
            "{name}",
            "product manager",
            subject="our PM",
            slot="name",
        ),
        _t(
            "declarative",
            "The API gateway runs on port {port}.",
            "{port}",
            "gateway",
            subject="the gateway's port",
            slot="port",
        ),
        _t("number", "There are {n} microservices in the mesh right now.", "{n} microservices"),
        _t(
            "declarative",
            "Our bucket for uploads is `{env}`.",
            "{env}",
            "uploads",
            subject="where user files go",
            slot="env",
        ),
    ),
    "goal": (
        _t("need", "I need you to add rate limiting to `{module}`.", "{module}", "rate limiting"),
        _t("question", "Could you make the `{ident}` export resumable?", "{ident}", "resumable"),
        _t("framed", "Time to fix the timezone bug in `{module}`.", "{module}", "timezone bug"),
        _t(
            "framed",
            "Main thing today is cutting `{ident}` startup time in half.",
            "{ident}",
            "startup time",
        ),
        _t("let's", "Let's add OpenTelemetry tracing to `{module}`.", "{module}", "tracing"),
        _t("framed", "Your next task: document the `{ident}` endpoints.", "{ident}", "document"),
    ),
    "preference": (
        _t("first person", "I'd prefer `{lib}` over requests for new code.", "{lib}", "prefer"),
        _t(
            "limit",
            "Keep PR descriptions short, {n} bullet points max.",
            "{n} bullet",
            "pr descriptions",
            subject="the bullet limit for pull requests",
            slot="n",
        ),
        _t(
            "third person",
            "The user wants variable names in full words, no abbreviations like `{prefix}`.",
            "{prefix}",
            "abbreviations",
        ),
        _t("third person", "{name} prefers squash merges.", "{name}", "squash"),
        _t("polite", "Please stick to f-strings in `{module}`.", "{module}", "f-strings"),
        _t(
            "hedged",
            "It'd be great to have a docstring example for each public function in `{module}`.",
            "{module}",
            "docstring example",
        ),
    ),
}
HELD_OUT_3_FINAL_UPDATES = (
    "Oops, {subject} is actually {new}.",
    "New info on {subject}: {new}.",
    "{subject_cap}? That's {new} since this morning.",
)
# Issue 24, second pass: written at once, before any summary of them was read, with new
# domains (mobile, payments, ML training, firmware; clinics, logistics, game servers, a data
# warehouse), constraints said as plain facts about limits, goals said as plain statements,
# and updates that name their subject in words the canary does not use. HELD_OUT_4 is read
# for fixes; HELD_OUT_4_FINAL never is: it is measured once, at the end.
HELD_OUT_4: dict[str, tuple[Template, ...]] = {
    "safety rule": (
        _t(
            "hands off",
            "Leave the `{env}` payment ledger strictly alone: read it if you must, but no writes.",
            "{env}",
            "ledger",
        ),
        _t(
            "only me",
            "Wiping anything under {path} is something only I get to do.",
            "{path}",
            "wiping",
        ),
        _t(
            "not yours",
            "Rotating the {code} signing key is a human's job, not yours.",
            "{code}",
            "signing key",
        ),
        _t(
            "team rule",
            "Our on-call rule: nobody force-pushes to `{ident}`.",
            "{ident}",
            "force-push",
            subject="the protected branch",
            slot="ident",
        ),
        _t(
            "treat as",
            "Treat {host} as production; touching it needs my sign-off.",
            "{host}",
            "sign-off",
            subject="the box that counts as prod",
            slot="host",
        ),
        _t(
            "passive",
            "Customer emails from the {domain} tenant must never end up in logs.",
            "{domain}",
            "logs",
            subject="the tenant whose addresses stay private",
            slot="domain",
        ),
        _t(
            "hold off",
            "Please hold off on any deploys after {time} on Fridays.",
            "{time}",
            "deploys",
            subject="the end-of-week release cutoff",
            slot="time",
        ),
        _t(
            "reason",
            "Keep your hands off the bootloader at {path}; bricked devices are no fun.",
            "{path}",
            "bootloader",
        ),
    ),
    "constraint": (
        _t(
            "quota",
            "The training job gets {n} GPUs at most, that's what the quota allows.",
            "{n} gpus",
            subject="the accelerator allowance",
            slot="n",
        ),
        _t(
            "floor",
            "Whatever we ship has to run on iOS {ver} and up.",
            "ios {ver}",
            subject="the oldest phone OS we support",
            slot="ver",
        ),
        _t(
            "ceiling",
            "Total spend on the cloud bill this month stays below {money}.",
            "{money}",
            "cloud",
            subject="this month's hosting ceiling",
            slot="money",
        ),
        _t(
            "thing can't",
            "The firmware image can't be larger than {n} KB.",
            "{n} kb",
            subject="the size ceiling for the flashed binary",
            slot="n",
        ),
        _t(
            "target",
            "API responses need to come back in under {n} ms at p99.",
            "{n} ms",
            "p99",
            subject="the tail-latency target",
            slot="n",
        ),
        _t(
            "frozen",
            "We're on `{lib}` {ver} and staying there until the audit is done.",
            "{lib}",
            "{ver}",
            subject="the release we're frozen on",
            slot="ver",
        ),
        _t(
            "source",
            "Dependencies come from the {domain} mirror and nowhere else.",
            "{domain}",
            "mirror",
            subject="where packages get fetched from",
            slot="domain",
        ),
        _t(
            "or else",
            "The docs build must finish inside {n} minutes or CI kills it.",
            "{n} minutes",
            subject="the time allowed for the documentation job",
            slot="n",
        ),
    ),
    "fact": (
        _t(
            "location",
            "The staging database lives on {host}.",
            "{host}",
            "staging database",
            subject="where the pre-prod DB runs",
            slot="host",
        ),
        _t(
            "owner",
            "{name} is the product owner for the checkout flow.",
            "{name}",
            "checkout",
            subject="who owns the purchase funnel",
            slot="name",
        ),
        _t(
            "identifier",
            "Our Sentry project id is {code}.",
            "{code}",
            "sentry",
            subject="the error-tracking project",
            slot="code",
        ),
        _t(
            "port",
            "The mobile app talks to the backend on port {port}.",
            "{port}",
            "mobile",
            subject="the port the phone client connects to",
            slot="port",
        ),
        _t(
            "path",
            "Model checkpoints are written to {path} every epoch.",
            "{path}",
            "checkpoints",
            subject="the folder for saved weights",
            slot="path",
        ),
        _t(
            "schedule",
            "The nightly export kicks off at {time} UTC.",
            "{time}",
            "export",
            subject="when the overnight dump starts",
            slot="time",
        ),
        _t(
            "count",
            "Roughly {n} devices in the field still run the old firmware.",
            "{n} devices",
            "firmware",
            subject="how many units are on the previous build",
            slot="n",
        ),
        _t(
            "image",
            "The container base image is `{image}`.",
            "{image}",
            subject="the Docker starting point",
            slot="image",
        ),
    ),
    "goal": (
        _t(
            "need today",
            "The thing I actually need today is a CSV export for `{module}`.",
            "{module}",
            "csv export",
        ),
        _t(
            "objective",
            "Main objective: cut the cold-start time of `{module}` below {n} ms.",
            "{module}",
            "cold-start",
        ),
        _t(
            "look into",
            "Could you look into why `{ident}` leaks memory on long runs?",
            "{ident}",
            "leaks memory",
        ),
        _t(
            "time to",
            "Time to add offline mode to the `{module}` screen.",
            "{module}",
            "offline mode",
        ),
        _t(
            "has to + build",
            "The `{ident}` webhook has to be retried on failure, please build that.",
            "{ident}",
            "retried",
        ),
        _t(
            "what's left",
            "What's left is porting `{module}` to the new payments API.",
            "{module}",
            "payments api",
        ),
        _t(
            "love for you",
            "I'd love for you to write a migration that splits `{ident}` into two tables.",
            "{ident}",
            "migration",
        ),
        _t("list", "Next on the list: dark mode for `{module}`.", "{module}", "dark mode"),
    ),
    "preference": (
        _t("tend to", "I tend to like small PRs, one concern each.", "small prs"),
        _t(
            "happy",
            "Type hints everywhere in `{module}` would make me happy.",
            "{module}",
            "type hints",
        ),
        _t(
            "third person",
            "{name} likes commit subjects in the imperative mood.",
            "{name}",
            "imperative",
        ),
        _t(
            "I'd go with",
            "For logging I'd go with `{lib}` over print statements.",
            "{lib}",
            "logging",
            subject="the log library",
            slot="lib",
        ),
        _t(
            "reads best",
            "Dates in reports read best as ISO 8601 in {zone}.",
            "{zone}",
            "iso 8601",
            subject="the timezone for report dates",
            slot="zone",
        ),
        _t(
            "should",
            "Comments in `{module}` should be sparse and explain why, not what.",
            "{module}",
            "comments",
        ),
        _t(
            "please",
            "Show me money as {currency}, please.",
            "{currency}",
            subject="the currency I read amounts in",
            slot="currency",
        ),
        _t("taste", "snake_case for new JSON fields, that's my taste.", "snake_case", "json"),
    ),
}
HELD_OUT_4_UPDATES = (
    "Heads-up on {subject}: we moved it to {new}.",
    "{subject_cap} got bumped to {new} yesterday, so go by that.",
    "Change of plan for {subject}, make it {new}.",
    "Ignore the {old} I gave you; {subject} is {new}.",
    "Update: {subject} = {new}.",
)
HELD_OUT_4_FINAL: dict[str, tuple[Template, ...]] = {
    "safety rule": (
        _t(
            "off-limits",
            "Patient records in {path} are off-limits to scripts.",
            "{path}",
            "patient",
        ),
        _t(
            "nothing gets",
            "Nothing gets emailed to addresses outside {domain}.",
            "{domain}",
            "emailed",
            subject="the mail domain we may write to",
            slot="domain",
        ),
        _t(
            "ask before",
            "Ask before you restart the `{env}` game servers, players are online.",
            "{env}",
            "restart",
        ),
        _t("ever", "The `{ident}` table gets no DELETE statements, ever.", "{ident}", "delete"),
        _t(
            "between us",
            "Access code {code} stays between us; don't paste it anywhere.",
            "{code}",
            "paste",
            subject="the door PIN",
            slot="code",
        ),
        _t(
            "until",
            "No schema changes on {host} until the freeze lifts.",
            "{host}",
            "schema",
            subject="the frozen warehouse machine",
            slot="host",
        ),
        _t(
            "stay away",
            "Payroll runs at {time}; stay away from the HR service around then.",
            "{time}",
            "payroll",
            subject="the salary run",
            slot="time",
        ),
        _t(
            "only X may",
            "Only {name} may approve a production rollback.",
            "{name}",
            "rollback",
            subject="who signs off on going back a release",
            slot="name",
        ),
    ),
    "constraint": (
        _t(
            "tops",
            "Trucks can carry {n} pallets tops, plan routes accordingly.",
            "{n} pallets",
            subject="the vehicle load capacity",
            slot="n",
        ),
        _t(
            "no exceptions",
            "The warehouse queries have a {n} second timeout, no exceptions.",
            "{n} second",
            subject="the query deadline",
            slot="n",
        ),
        _t(
            "capped near",
            "Our budget for the pilot is capped near {money}.",
            "{money}",
            "pilot",
            subject="the trial's spending ceiling",
            slot="money",
        ),
        _t(
            "fixed at",
            "Game server tick rate is fixed at {n} Hz; the clients depend on it.",
            "{n} hz",
            subject="the simulation frequency",
            slot="n",
        ),
        _t(
            "compatible",
            "Everything has to stay compatible with Postgres {ver}.",
            "postgres {ver}",
            subject="the database release we target",
            slot="ver",
        ),
        _t(
            "never local",
            "Appointments go in {zone} time, never the server's local zone.",
            "{zone}",
            "appointments",
            subject="the clinic's clock",
            slot="zone",
        ),
        _t(
            "limited",
            "The HR export is limited to {n} rows per file.",
            "{n} rows",
            subject="the per-file record cap",
            slot="n",
        ),
        _t(
            "that only",
            "Builds pull `{image}` and that image only.",
            "{image}",
            subject="the one container the pipeline may use",
            slot="image",
        ),
    ),
    "fact": (
        _t(
            "at",
            "The route planner service is at {host}.",
            "{host}",
            "route planner",
            subject="where routing runs",
            slot="host",
        ),
        _t(
            "this week",
            "{name} handles on-call for the warehouse this week.",
            "{name}",
            "on-call",
            subject="this week's pager holder",
            slot="name",
        ),
        _t(
            "listens",
            "The match server listens on UDP {port}.",
            "{port}",
            "udp",
            subject="the multiplayer socket number",
            slot="port",
        ),
        _t(
            "dumped",
            "Shift data is dumped into {path} nightly.",
            "{path}",
            "shift",
            subject="the folder the rota lands in",
            slot="path",
        ),
        _t(
            "ticket",
            "Internal ticket for the outage is {code}.",
            "{code}",
            "outage",
            subject="the incident reference",
            slot="code",
        ),
        _t(
            "about",
            "About {n} clinics use the booking tool today.",
            "{n} clinics",
            subject="how many sites are on scheduling",
            slot="n",
        ),
        _t(
            "we use",
            "We use `{lib}` for the ETL retries.",
            "{lib}",
            "etl",
            subject="the backoff library in the pipeline",
            slot="lib",
        ),
        _t(
            "reset",
            "Leaderboards reset at {time} server time.",
            "{time}",
            "leaderboards",
            subject="the ranking wipe",
            slot="time",
        ),
    ),
    "goal": (
        _t(
            "focus",
            "Today's focus is making `{module}` handle daylight-saving changes.",
            "{module}",
            "daylight",
        ),
        _t(
            "figure out",
            "Please figure out why `{ident}` double-books rooms.",
            "{ident}",
            "double-books",
        ),
        _t(
            "needs",
            "The route optimizer in `{module}` needs a fallback when the map API is down.",
            "{module}",
            "fallback",
        ),
        _t(
            "can we",
            "Can we get `{ident}` to stream results instead of buffering?",
            "{ident}",
            "stream",
        ),
        _t(
            "assignment",
            "Your assignment: anti-cheat checks in `{module}`.",
            "{module}",
            "anti-cheat",
        ),
        _t(
            "after",
            "I'm after a nightly reconciliation job for `{ident}`.",
            "{ident}",
            "reconciliation",
        ),
        _t("retire", "Time to retire the legacy `{module}` importer.", "{module}", "retire"),
        _t(
            "priority",
            "First priority is a health endpoint for `{module}`.",
            "{module}",
            "health endpoint",
        ),
    ),
    "preference": (
        _t(
            "find easier",
            "I find pytest parametrize much easier to read than loops.",
            "parametrize",
        ),
        _t(
            "would rather",
            "{name} would rather see SQL in .sql files than inline strings.",
            "{name}",
            "sql",
        ),
        _t(
            "favour",
            "Wherever it's cheap, favour pure functions in `{module}`.",
            "{module}",
            "pure functions",
        ),
        _t("bother", "Short variable names bother me; spell them out.", "variable names"),
        _t(
            "reads better",
            "Round durations to {n} minutes in the UI, I think that reads better.",
            "{n} minutes",
            subject="the rounding step for durations",
            slot="n",
        ),
        _t(
            "leans on",
            "Our team leans on `{lib}` for HTTP mocks.",
            "{lib}",
            "mocks",
            subject="the fake-server tool",
            slot="lib",
        ),
        _t(
            "don't mind",
            "Put the changelog entry under `{prefix}` headings, if you don't mind.",
            "{prefix}",
            "changelog",
        ),
        _t(
            "look nicer",
            "Reports look nicer to me in {currency} without cents.",
            "{currency}",
            "cents",
            subject="the currency for the summaries I read",
            slot="currency",
        ),
    ),
}
HELD_OUT_4_FINAL_UPDATES = (
    "Slight change: {subject} should now be {new}.",
    "{subject_cap}? It's {new} as of this week.",
    "We switched {subject} over to {new}.",
    "Revised: {new} for {subject}, not {old}.",
    "Just heard back, {subject} is {new} from now on.",
)
# Issue 24, fourth pass. DEV_C was written together with HELD_OUT_5, before any summary of
# either was read; DEV_C's failures were then read to find why superseded values survive
# (development material), HELD_OUT_5's never were: it was run once, at the end.
DEV_C: dict[str, tuple[Template, ...]] = {
    "safety rule": (
        _t(
            "off-limits",
            "Deleting rows from the `{ident}` table is off-limits for you.",
            "{ident}",
            "deleting",
        ),
        _t(
            "stop and ask",
            "If a command would touch {host}, stop and ask me; that box is production.",
            "{host}",
            "stop and ask",
            subject="the production box",
            slot="host",
        ),
        _t(
            "third person",
            "The user forbids publishing anything from {path} to the public bucket.",
            "{path}",
            "publishing",
        ),
        _t(
            "out of",
            "Keep the recovery phrase {code} out of every file, log and message.",
            "{code}",
            "recovery phrase",
            subject="the recovery phrase",
            slot="code",
        ),
        _t(
            "ever",
            "No pushing to the `{env}` branch, ever — it deploys itself.",
            "{env}",
            "pushing",
            subject="the branch that auto-deploys",
            slot="env",
        ),
        _t(
            "only for",
            "Pausing the {domain} DNS records is for the infra lead only, never for an agent.",
            "{domain}",
            "dns",
            subject="the DNS zone nobody but infra pauses",
            slot="domain",
        ),
        _t(
            "go-ahead",
            "Anything that emails real customers needs my explicit go-ahead first.",
            "email",
            "go-ahead",
        ),
        _t(
            "imperative",
            "Do not restart the `{module}` worker during business hours.",
            "{module}",
            "restart",
        ),
    ),
    "constraint": (
        _t(
            "at most",
            "The whole bundle may weigh {n} KB at most.",
            "{n} kb",
            subject="the size budget for the bundle",
            slot="n",
        ),
        _t(
            "limited",
            "Queries against the warehouse are limited to {n} seconds each.",
            "{n} seconds",
            "warehouse",
            subject="the per-query time limit",
            slot="n",
        ),
        _t(
            "stay on",
            "Stay on Node {ver}; the hosting provider offers nothing else.",
            "node {ver}",
            subject="the Node runtime version",
            slot="ver",
        ),
        _t(
            "must not pass",
            "Spending on the labeling vendor must not pass {money} this quarter.",
            "{money}",
            "labeling",
            subject="the labeling spend cap",
            slot="money",
        ),
        _t(
            "no exceptions",
            "All timestamps we store are in {zone}, no exceptions.",
            "{zone}",
            "timestamps",
            subject="the storage timezone",
            slot="zone",
        ),
        _t(
            "only",
            "Only `{lib}` may be added as a new dependency; nothing else.",
            "{lib}",
            "dependency",
            subject="the one allowed new dependency",
            slot="lib",
        ),
        _t(
            "nowhere else",
            "Builds run on the {env} runner pool and nowhere else.",
            "{env}",
            "runner",
            subject="the CI runner pool",
            slot="env",
        ),
        _t(
            "keep under",
            "Keep each migration under {n} statements.",
            "{n} statements",
            subject="the per-migration statement limit",
            slot="n",
        ),
    ),
    "fact": (
        _t(
            "location",
            "The search cluster sits at {host}.",
            "{host}",
            "search",
            subject="the search cluster's address",
            slot="host",
        ),
        _t(
            "path",
            "Invoices are archived in {path}.",
            "{path}",
            "invoices",
            subject="the invoice archive folder",
            slot="path",
        ),
        _t(
            "owner",
            "{name} handles security reviews for this repo.",
            "{name}",
            "security",
            subject="the security reviewer",
            slot="name",
        ),
        _t(
            "port",
            "The metrics endpoint listens on {port}.",
            "{port}",
            "metrics",
            subject="the metrics port",
            slot="port",
        ),
        _t(
            "key",
            "Our feature-flag service key is {code}.",
            "{code}",
            "flag",
            subject="the flag service key",
            slot="code",
        ),
        _t(
            "count",
            "About {n} tenants still use the legacy login.",
            "{n} tenants",
            "legacy login",
            subject="the number of tenants on the old login",
            slot="n",
        ),
        _t(
            "schedule",
            "Backups run every day at {time}.",
            "{time}",
            "backups",
            subject="the backup time",
            slot="time",
        ),
        _t(
            "image",
            "The base image for the workers is `{image}`.",
            "{image}",
            "workers",
            subject="the worker image",
            slot="image",
        ),
    ),
    "goal": (
        _t(
            "please",
            "Please add rate limiting to the `{module}` endpoints.",
            "{module}",
            "rate limiting",
        ),
        _t(
            "track down",
            "I need you to track down why `{ident}` returns stale results.",
            "{ident}",
            "stale results",
        ),
        _t(
            "job today",
            "Your job today: migrate `{module}` from callbacks to async/await.",
            "{module}",
            "async",
        ),
        _t(
            "have to",
            "We have to get test coverage of `{module}` above {n}%.",
            "{module}",
            "coverage",
        ),
        _t("question", "Can you make the `{ident}` export resumable?", "{ident}", "resumable"),
        _t(
            "next piece",
            "The next piece of work is a dashboard page for `{module}` usage.",
            "{module}",
            "dashboard",
        ),
        _t(
            "build", "Build a CLI command that prunes old `{ident}` snapshots.", "{ident}", "prunes"
        ),
        _t(
            "let's",
            "Let's split `{module}` into a reader and a writer module.",
            "{module}",
            "reader",
        ),
    ),
    "preference": (
        _t("prefer", "I prefer early returns over nested ifs.", "early returns"),
        _t(
            "third person",
            "{name} would rather see f-strings than .format() calls.",
            "{name}",
            "f-strings",
        ),
        _t(
            "read better",
            "Tests in `{module}` read better with pytest parametrize, if you can.",
            "{module}",
            "parametrize",
        ),
        _t(
            "like",
            "Personally I like `{lib}` for HTTP mocking.",
            "{lib}",
            "mocking",
            subject="the mocking library",
            slot="lib",
        ),
        _t(
            "where possible",
            "Where possible, keep functions under {n} lines.",
            "{n} lines",
            subject="the function length I like",
            slot="n",
        ),
        _t("team", "The team favours YAML with two-space indents.", "two-space"),
        _t(
            "I'd like",
            "I'd like prices quoted in {currency}.",
            "{currency}",
            "prices",
            subject="the currency for prices",
            slot="currency",
        ),
        _t(
            "my preference",
            "My preference is squash merges into `{env}`.",
            "{env}",
            "squash",
            subject="the branch I squash-merge into",
            slot="env",
        ),
    ),
}
DEV_C_UPDATES = (
    "Quick correction on {subject}: it's {new} now.",
    "{subject_cap} has changed — {new}.",
    "Please use {new} for {subject} from today.",
    "Actually, {subject} is {new}, not {old}.",
    "New info: {subject} became {new}.",
)
# Never read: run once at the end of the fourth pass (see DEV_C).
HELD_OUT_5: dict[str, tuple[Template, ...]] = {
    "safety rule": (
        _t("not to", "You are not to drop any table in the `{ident}` schema.", "{ident}", "drop"),
        _t(
            "stay with me",
            "Credentials for {host} stay with me — don't copy them anywhere.",
            "{host}",
            "credentials",
            subject="the host whose credentials I keep",
            slot="host",
        ),
        _t(
            "policy",
            "Our policy says agents may never approve their own pull requests in `{module}`.",
            "{module}",
            "approve",
        ),
        _t(
            "don't ever",
            "Please don't ever disable the audit log on {env}.",
            "{env}",
            "audit log",
            subject="the environment with the audit log",
            slot="env",
        ),
        _t(
            "read-only",
            "The {path} volume stays mounted read-only, whoever is working.",
            "{path}",
            "read-only",
            subject="the read-only volume",
            slot="path",
        ),
        _t(
            "secret",
            "The emergency token {code} must stay secret, even from other agents.",
            "{code}",
            "secret",
            subject="the emergency token",
            slot="code",
        ),
        _t(
            "sign-off",
            "Mass-mailing users of {domain} requires sign-off from legal.",
            "{domain}",
            "sign-off",
        ),
        _t(
            "forbidden",
            "Sending traffic to {host} without the VPN is forbidden.",
            "{host}",
            "vpn",
            subject="the VPN-only host",
            slot="host",
        ),
    ),
    "constraint": (
        _t(
            "no more",
            "Each request may use {n} MB of memory, no more.",
            "{n} mb",
            "memory",
            subject="the per-request memory limit",
            slot="n",
        ),
        _t(
            "ceiling",
            "The report job has a hard ceiling of {n} minutes.",
            "{n} minutes",
            subject="the report job's time ceiling",
            slot="n",
        ),
        _t(
            "keep working",
            "The service must keep working on Python {ver}.",
            "python {ver}",
            subject="the minimum Python",
            slot="ver",
        ),
        _t(
            "don't go over",
            "Marketing's budget for this test is {money}; don't go over.",
            "{money}",
            subject="marketing's test budget",
            slot="money",
        ),
        _t(
            "nothing homegrown",
            "Use `{lib}` for retries and nothing homegrown.",
            "{lib}",
            "retries",
            subject="the retry library",
            slot="lib",
        ),
        _t(
            "only",
            "Traffic is served from {zone} only.",
            "{zone}",
            "traffic",
            subject="the serving region",
            slot="zone",
        ),
        _t(
            "until notice",
            "The rollout stays at {n} percent of users until further notice.",
            "{n} percent",
            subject="the rollout share",
            slot="n",
        ),
        _t(
            "have to start",
            "Commit messages have to start with `{prefix}`.",
            "{prefix}",
            "commit",
            subject="the commit prefix",
            slot="prefix",
        ),
    ),
    "fact": (
        _t(
            "fyi",
            "FYI the message broker runs on {host}.",
            "{host}",
            "broker",
            subject="where the queue server is",
            slot="host",
        ),
        _t(
            "owner",
            "{name} signs off on releases now that Sam left.",
            "{name}",
            "releases",
            subject="the release approver",
            slot="name",
        ),
        _t(
            "path",
            "Uploaded files end up under {path}.",
            "{path}",
            "uploaded",
            subject="the upload folder",
            slot="path",
        ),
        _t(
            "port",
            "The admin panel is served on port {port}.",
            "{port}",
            "admin",
            subject="the admin port",
            slot="port",
        ),
        _t(
            "key",
            "The license key we were given is {code}.",
            "{code}",
            "license",
            subject="the license key",
            slot="code",
        ),
        _t(
            "count",
            "We have about {n} paying customers in the pilot.",
            "{n} paying",
            subject="the pilot customer count",
            slot="n",
        ),
        _t(
            "schedule",
            "The weekly sync with the vendor is at {time} on Tuesdays.",
            "{time}",
            "sync",
            subject="the vendor call time",
            slot="time",
        ),
        _t(
            "relay",
            "Emails go out through the {domain} relay.",
            "{domain}",
            "relay",
            subject="the mail relay",
            slot="domain",
        ),
    ),
    "goal": (
        _t(
            "the task", "The task: make `{module}` handle unicode filenames.", "{module}", "unicode"
        ),
        _t(
            "question",
            "Could you add pagination to the `{ident}` listing?",
            "{ident}",
            "pagination",
        ),
        _t(
            "after",
            "What I'm after is a retry wrapper around `{module}` calls.",
            "{module}",
            "retry wrapper",
        ),
        _t("stop", "Please get the `{ident}` job to stop timing out.", "{ident}", "timing out"),
        _t(
            "new task",
            "New task for you: write docs for the `{module}` public API.",
            "{module}",
            "docs",
        ),
        _t(
            "should",
            "We should replace the polling in `{module}` with webhooks.",
            "{module}",
            "webhooks",
        ),
        _t("figure out", "Figure out why the `{ident}` cache never expires.", "{ident}", "expires"),
        _t(
            "I'd like",
            "I'd like a benchmark comparing `{module}` before and after the change.",
            "{module}",
            "benchmark",
        ),
    ),
    "preference": (
        _t("find", "I find dataclasses clearer than dicts for config.", "dataclasses"),
        _t(
            "third person",
            "{name} prefers one review comment per issue.",
            "{name}",
            "one review comment",
        ),
        _t("bother", "Short variable names bother me; spell them out.", "variable names"),
        _t(
            "go with",
            "Go with `{lib}` for parsing, I trust it more.",
            "{lib}",
            "parsing",
            subject="the parser library",
            slot="lib",
        ),
        _t(
            "read best",
            "Log lines read best with at most {n} fields.",
            "{n} fields",
            subject="the field count per log line",
            slot="n",
        ),
        _t("please", "Show durations in seconds, not milliseconds, please.", "seconds"),
        _t(
            "team likes",
            "Our team likes the {currency} figure first, then USD.",
            "{currency}",
            "usd",
            subject="the currency shown first",
            slot="currency",
        ),
        _t(
            "rather",
            "Honestly I'd rather have one test file per `{module}` feature.",
            "{module}",
            "test file",
        ),
    ),
}
HELD_OUT_5_UPDATES = (
    "Correction from my side: {subject} is {new} these days.",
    "{subject_cap} — changed to {new} this morning.",
    "Forget {old}; {subject} is {new}.",
    "Turns out {subject} should be {new}.",
    "For {subject}, please switch to {new} going forward.",
    "They told me {subject} is {new} now.",
)
# Written in the fourth pass after DEV_C's fixes, to find more ways an update is missed:
# rule-shaped updates, a subject named in a separate sentence, "(was …)" notes. Development
# material from the start (its failures were read).
DEV_D: dict[str, tuple[Template, ...]] = {
    "safety rule": (
        _t(
            "never",
            "Never copy customer exports off {host}.",
            "{host}",
            "customer exports",
            subject="the host holding the exports",
            slot="host",
        ),
        _t(
            "approval",
            "Rotating the `{ident}` credentials needs approval from {name}.",
            "{ident}",
            "rotating",
            subject="who approves credential rotation",
            slot="name",
        ),
        _t(
            "third person",
            "The client won't allow any scraping of {domain}.",
            "{domain}",
            "scraping",
            subject="the site we may not scrape",
            slot="domain",
        ),
        _t(
            "hands off",
            "Hands off the {env} cluster unless I say so.",
            "{env}",
            "hands off",
            subject="the cluster to leave alone",
            slot="env",
        ),
        _t(
            "must not",
            "The admin password {code} must not appear in any commit.",
            "{code}",
            "admin password",
            subject="the admin password",
            slot="code",
        ),
        _t(
            "only",
            "Only I can merge into `{ident}`.",
            "{ident}",
            "merge",
            subject="the branch only I merge into",
            slot="ident",
        ),
    ),
    "constraint": (
        _t(
            "under",
            "Keep PRs under {n} changed lines.",
            "{n} changed lines",
            subject="the PR size limit",
            slot="n",
        ),
        _t(
            "deadline",
            "The migration has to be done by {time} on Sunday.",
            "{time}",
            "migration",
            subject="the migration deadline",
            slot="time",
        ),
        _t(
            "budget",
            "We can spend {money} on the load test, not a cent more.",
            "{money}",
            "load test",
            subject="the load-test budget",
            slot="money",
        ),
        _t(
            "version",
            "Target Go {ver} for the new service.",
            "go {ver}",
            subject="the Go version",
            slot="ver",
        ),
        _t(
            "region",
            "Data must stay in {zone}.",
            "{zone}",
            "data",
            subject="the data residency zone",
            slot="zone",
        ),
        _t(
            "lib",
            "Stick with `{lib}` for serialization.",
            "{lib}",
            "serialization",
            subject="the serialization library",
            slot="lib",
        ),
    ),
    "fact": (
        _t(
            "host",
            "The Grafana instance is at {host}.",
            "{host}",
            "grafana",
            subject="the dashboards host",
            slot="host",
        ),
        _t(
            "person",
            "{name} is our contact at the bank.",
            "{name}",
            "bank",
            subject="the bank contact",
            slot="name",
        ),
        _t(
            "port",
            "SSH on the bastion uses port {port}.",
            "{port}",
            "bastion",
            subject="the bastion SSH port",
            slot="port",
        ),
        _t(
            "path",
            "Fixtures live in {path}.",
            "{path}",
            "fixtures",
            subject="the fixtures folder",
            slot="path",
        ),
        _t(
            "count",
            "The fleet has {n} edge nodes.",
            "{n} edge nodes",
            subject="the number of edge nodes",
            slot="n",
        ),
        _t(
            "time",
            "The batch window opens at {time}.",
            "{time}",
            "batch window",
            subject="the batch window",
            slot="time",
        ),
    ),
    "goal": (
        _t("please", "Please make the `{module}` importer idempotent.", "{module}", "idempotent"),
        _t("need", "I need a health-check endpoint for `{module}`.", "{module}", "health-check"),
        _t(
            "question", "Can you profile why `{ident}` is slow on big inputs?", "{ident}", "profile"
        ),
        _t("goal", "Goal for today: get `{module}` passing under mypy strict.", "{module}", "mypy"),
        _t("let's", "Let's add a dry-run flag to the `{ident}` command.", "{ident}", "dry-run"),
        _t("want", "I want `{module}` split into smaller files.", "{module}", "smaller files"),
    ),
    "preference": (
        _t(
            "prefer",
            "I prefer `{lib}` for date handling.",
            "{lib}",
            "date handling",
            subject="the date library",
            slot="lib",
        ),
        _t(
            "likes",
            "{name} likes reviews within a day.",
            "{name}",
            "reviews",
            subject="the reviewer who likes fast reviews",
            slot="name",
        ),
        _t(
            "rather",
            "I'd rather have {n} small commits than one big one.",
            "{n} small commits",
            subject="the number of commits I like",
            slot="n",
        ),
        _t("style", "Our style is trailing commas everywhere.", "trailing commas"),
        _t(
            "please",
            "Please write changelog entries in {currency}-style plain English.",
            "{currency}",
            "changelog",
            subject="the changelog style",
            slot="currency",
        ),
        _t(
            "ideally",
            "Ideally the CLI prints progress every {n} seconds.",
            "{n} seconds",
            subject="the progress interval",
            slot="n",
        ),
    ),
}
DEV_D_UPDATES = (
    "{subject_cap}: {new} (was {old}).",
    "Changing {subject} to {new}.",
    "We now use {new} for {subject}.",
    "{subject_cap} is no longer {old} — it's {new}.",
    "Oh, {subject}. That's {new} now.",
    "From next week {subject} will be {new}.",
    "Make {subject} {new} instead.",
    "I got it wrong earlier: {subject} is {new}.",
)
DEV_SEEDS = tuple(range(8))
DEV_B_SEEDS = tuple(range(100, 112))
HELD_OUT_SEEDS = tuple(range(300, 312))
HELD_OUT_2_SEEDS = tuple(range(500, 512))
HELD_OUT_3_SEEDS = tuple(range(700, 712))
HELD_OUT_3_FINAL_SEEDS = tuple(range(900, 912))
HELD_OUT_4_SEEDS = tuple(range(1100, 1112))
HELD_OUT_4_FINAL_SEEDS = tuple(range(1300, 1312))
DEV_C_SEEDS = tuple(range(1500, 1512))
HELD_OUT_5_SEEDS = tuple(range(1700, 1712))
DEV_D_SEEDS = tuple(range(1900, 1912))
# name → (templates, update wordings, seeds, offset of the random streams)
SETS: dict[str, tuple[dict[str, tuple[Template, ...]], tuple[str, ...], tuple[int, ...], int]] = {
    "dev": (DEV, DEV_UPDATES, DEV_SEEDS, 0),
    "dev-b": (DEV_B, DEV_B_UPDATES, DEV_B_SEEDS, 1),
    "held-out": (HELD_OUT, HELD_OUT_UPDATES, HELD_OUT_SEEDS, 2),
    "held-out-2": (HELD_OUT_2, HELD_OUT_2_UPDATES, HELD_OUT_2_SEEDS, 3),
    "held-out-3": (HELD_OUT_3, HELD_OUT_3_UPDATES, HELD_OUT_3_SEEDS, 4),
    "held-out-3-final": (HELD_OUT_3_FINAL, HELD_OUT_3_FINAL_UPDATES, HELD_OUT_3_FINAL_SEEDS, 5),
    "held-out-4": (HELD_OUT_4, HELD_OUT_4_UPDATES, HELD_OUT_4_SEEDS, 6),
    "held-out-4-final": (HELD_OUT_4_FINAL, HELD_OUT_4_FINAL_UPDATES, HELD_OUT_4_FINAL_SEEDS, 7),
    "dev-c": (DEV_C, DEV_C_UPDATES, DEV_C_SEEDS, 8),
    "dev-d": (DEV_D, DEV_D_UPDATES, DEV_D_SEEDS, 10),
    # Development-excluded: its failures are never read (run once, at the end).
    "held-out-5": (HELD_OUT_5, HELD_OUT_5_UPDATES, HELD_OUT_5_SEEDS, 9),
}


def _fill(text: str, values: dict[str, str]) -> str:
    return text.format(**values)


def make_canaries(seed: int, canary_set: str) -> list[Canary]:
    """PER_KIND canaries of each kind, about a third of the updatable ones updated."""
    templates, updates, _seeds, offset = SETS[canary_set]
    rng = random.Random(seed * 7919 + offset)
    canaries: list[Canary] = []
    for kind in KINDS:
        chosen = rng.sample(templates[kind], PER_KIND)
        for template in chosen:
            values = _values(rng)
            text = _fill(template.text, values)
            checks = tuple(_fill(c, values).casefold() for c in template.checks)
            update = None
            if template.subject and template.slot and rng.random() < 0.45:
                new_values = dict(values)
                while new_values[template.slot] == values[template.slot]:
                    new_values[template.slot] = _values(rng)[template.slot]
                new = new_values[template.slot]
                wording = rng.choice(updates)
                update_text = wording.format(
                    subject=template.subject,
                    subject_cap=template.subject[:1].upper() + template.subject[1:],
                    new=new,
                    old=values[template.slot],
                )
                # The update says the new value in its own words: the value is the check.
                update = Update(update_text, (new.casefold(),), values[template.slot])
            canaries.append(Canary(kind, template.style, text, checks, update))
    return canaries


# --- the session around them -------------------------------------------------------------

_USER_FILLER = (
    "ok",
    "thanks, go on",
    "looks good, continue",
    "sure",
    "great, keep going",
    "hmm ok. carry on with what you were doing",
    "nice",
)
_WRAPS = (
    "{c}",
    "Quick note before you continue. {c}",
    "Thanks for the update. {c} Anyway, carry on with the refactor.",
    "One more thing: {c}",
    "{c} That's all for now.",
    "Here is what I see locally:\n```\n{log}\n```\n{c}",
)
_ASSISTANT_CHATTER = (
    "Let me look at the next file.",
    "Acknowledged. Continuing with the plan.",
    "I'll check the test output next.",
    "Now let me run the tests again:",
    "Good, that worked. Moving on.",
    "Let me force-add it:",
)
# Lines that look like rules but are tool output; their NOISE token must stay out.
_NOISE_LINES = (
    "# Do not edit: generated by protoc from {noise}.proto",
    "WARNING: never use {noise} in production",
    "Only 3 retries are allowed for {noise} (see docs).",
    "You must restart {noise} for the changes to take effect.",
    "NOTE: Always run make {noise} before committing.",
    "hint: use --force to overwrite {noise}",
    "Users prefer the {noise} layout according to the survey data.",
)

_HELD_OUT_FILLER = ("k", "cool", "yep, continue", "all good so far", "fine by me", "go ahead")
_HELD_OUT_WRAPS = (
    "{c}",
    "Before I forget - {c}",
    "btw {c}",
    "{c}\nKeep going with the tests after that.",
    "Saw this in my terminal:\n```\n{log}\n```\nAlso: {c}",
    "Reading your last message again. {c} Thanks!",
)
_HELD_OUT_CHATTER = (
    "I'll open the module now.",
    "Understood, proceeding.",
    "Running the linter next.",
    "Okay, let me try that.",
    "That passed; on to the next item.",
    "Let me check git status:",
)
_HELD_OUT_NOISE_LINES = (
    "# IMPORTANT: do not modify {noise} by hand",
    "Never commit {noise} credentials (from the .gitignore template).",
    "You should always pin {noise} in requirements.txt.",
    "Prefer {noise} over the legacy API; it is deprecated since 2.0.",
    "Lines must be at most 80 characters ({noise}).",
    "error: the user must not be root when running {noise}",
    "The goal of {noise} is to keep the cache warm.",
)


_HELD_OUT_2_FILLER = ("mm", "right", "alright, next", "works for me", "👍", "carry on please")
_HELD_OUT_2_WRAPS = (
    "{c}",
    "Oh, and {c}",
    "FWIW: {c}",
    "{c} (sorry, should have said so at the start)",
    "Output on my side:\n```\n{log}\n```\nSeparately, {c}",
    "Two things. First, the tests look fine. Second, {c}",
)
_HELD_OUT_2_CHATTER = (
    "Opening the file.",
    "Sure thing, doing that now.",
    "Let me grep for usages.",
    "On it.",
    "Tests are green; continuing.",
    "I'll take a look at the config.",
)
_HELD_OUT_2_NOISE_LINES = (
    "DO NOT EDIT: this file is generated from {noise}.",
    "Deprecated: never call {noise}() directly, use the factory.",
    "Config must define {noise} before import.",
    "Users should prefer {noise} to the old client.",
    "TODO: only run {noise} on CI",
    "fatal: you must specify {noise} when detached",
    "The task of {noise} is to rotate the keys.",
)


_HELD_OUT_3_FILLER = ("ok cool", "makes sense", "go on then", "yes", "sounds right", "keep at it")
_HELD_OUT_3_WRAPS = (
    "{c}",
    "Also - {c}",
    "ah one thing I forgot to mention: {c}",
    "{c} Ok, back to it.",
    "This is what CI printed:\n```\n{log}\n```\nNot related, but {c}",
    "Reviewed your diff, fine. {c}",
    "hey, {c}",
)
_HELD_OUT_3_CHATTER = (
    "Reading the module.",
    "Got it, working on it.",
    "Let me run that again.",
    "Checking the imports.",
    "Done with that part, moving to the next.",
    "I'll look at the failing test.",
)
_HELD_OUT_3_NOISE_LINES = (
    "# WARNING: never hand-edit {noise}, regenerate it with make gen",
    "Under no circumstances call {noise} from a signal handler.",
    "You need to set {noise} before running the tests.",
    "We recommend {noise} for production deployments.",
    "Maximum {noise} connections reached, refusing new clients",
    "The task is to flush {noise} every 5 seconds.",
    "I want to use {noise} here # TODO remove",
    "Please keep {noise} sorted alphabetically.",
)
_HELD_OUT_3_FINAL_FILLER = ("sure thing", "ack", "nice work", "proceed", "👌", "great")
_HELD_OUT_3_FINAL_WRAPS = (
    "{c}",
    "Just so you know, {c}",
    "{c} Thanks.",
    "Logs from my run:\n```\n{log}\n```\nAnyway. {c}",
    "Small thing: {c}",
)
_HELD_OUT_3_FINAL_NOISE_LINES = (
    "NOTE: do not remove {noise}, other modules import it",
    "Whatever you do, keep {noise} in sync with the schema.",
    "Only {noise} is supported on Windows.",
    "Let's see what {noise} returns",
    "We need to refactor {noise} eventually.",
    "Prefer {noise} to manual locking.",
)

_HELD_OUT_4_FILLER = ("alright", "carry on", "nice", "👍 go", "good stuff", "hmm ok")
_HELD_OUT_4_WRAPS = (
    "{c}",
    "Output from the staging run:\n```\n{log}\n```\n{c}",
    "Unrelated to the failing test: {c}",
    "{c} No rush.",
    "Two things. First, the diff looks fine. Second, {c}",
    "btw {c}",
    "Here is the full trace:\n```\n{log}\n```\nOne more point. {c}",
)
_HELD_OUT_4_CHATTER = (
    "Opening the file now.",
    "Running the suite.",
    "Let me check the config.",
    "Looking at the traceback.",
    "That step passed.",
    "Next I'll inspect the handler.",
)
_HELD_OUT_4_NOISE_LINES = (
    "Never call {noise} twice in one request.",
    "# Do not edit {noise} by hand",
    "You must rerun {noise} after upgrading.",
    "Keep {noise} under 80 chars",
    "The goal of {noise} is batching writes.",
    "# I'd prefer {noise} over threads -- old comment",
)
_HELD_OUT_4_FINAL_FILLER = ("k thx", "right on", "good", "continue pls", "🙏", "ok next")
_HELD_OUT_4_FINAL_WRAPS = (
    "{c}",
    "Pasting the build log:\n```\n{log}\n```\nSeparate point - {c}",
    "Oh and {c}",
    "{c} Cheers.",
    "Looked at your change, fine. Anyway, {c}",
)
_HELD_OUT_4_FINAL_CHATTER = (
    "Inspecting the schema.",
    "Running the linter.",
    "Looking into it.",
    "That compiled.",
    "Fetching the logs.",
    "Now the next file.",
)
_HELD_OUT_4_FINAL_NOISE_LINES = (
    "Always close {noise} in a finally block.",
    "Must not exceed {noise} retries.",
    "Avoid {noise} in hot loops.",
    "Task: migrate {noise} to v2",
    "We should prefer {noise} here.",
    "Under no circumstance use {noise} directly",
)

_DEV_C_FILLER = ("okie", "yep", "continue then", "👍🏻", "fine", "keep going pls")
_DEV_C_WRAPS = (
    "{c}",
    "Meanwhile, {c}",
    "The job log, for what it's worth:\n```\n{log}\n```\nUnrelated: {c}",
    "{c} Back to you.",
    "Had a look at the PR, it's fine. Also {c}",
    "Note to self and to you: {c}",
)
_DEV_C_CHATTER = (
    "Let me open the handler.",
    "Running the checks again.",
    "Reading the migration.",
    "I'll grep for that.",
    "Done; next file.",
    "Checking the fixtures.",
)
_DEV_C_NOISE_LINES = (
    "Never log {noise} payloads at INFO.",
    "# Must keep {noise} below 10 entries",
    "Please restart {noise} after editing this file.",
    "Goal: deprecate {noise} by Q3",
    "The user prefers {noise} (from an old survey)",
)
_HELD_OUT_5_FILLER = ("mhm", "ok, and?", "cheers", "go for it", "yup yup", "sounds fine")
_HELD_OUT_5_WRAPS = (
    "{c}",
    "Right, before I forget: {c}",
    "Here's what the deploy printed:\n```\n{log}\n```\nOn another note, {c}",
    "{c} Thanks a lot.",
    "Looks good so far. Quick aside - {c}",
    "Copying this from the runbook:\n```\n{log}\n```\n{c}",
)
_HELD_OUT_5_CHATTER = (
    "Taking a look.",
    "Rebuilding now.",
    "Checking the diff.",
    "Let me re-run the failing case.",
    "That part is done.",
    "Opening the config next.",
)
_HELD_OUT_5_NOISE_LINES = (
    "Do not call {noise} from async code.",
    "WARNING: {noise} must be at most 3 levels deep",
    "Always flush {noise} before exit.",
    "Objective: remove {noise} from the public API",
    "We'd rather use {noise} here, see ADR-7.",
    "Never expose {noise} to clients.",
)


@dataclass(frozen=True, slots=True)
class Surroundings:
    """What a session says around its canaries: filler, wraps, chatter, tool-output noise."""

    filler: tuple[str, ...]
    wraps: tuple[str, ...]
    chatter: tuple[str, ...]
    noise_lines: tuple[str, ...]


DEV_SURROUNDINGS = Surroundings(_USER_FILLER, _WRAPS, _ASSISTANT_CHATTER, _NOISE_LINES)
HELD_OUT_SURROUNDINGS = Surroundings(
    _HELD_OUT_FILLER, _HELD_OUT_WRAPS, _HELD_OUT_CHATTER, _HELD_OUT_NOISE_LINES
)
HELD_OUT_2_SURROUNDINGS = Surroundings(
    _HELD_OUT_2_FILLER, _HELD_OUT_2_WRAPS, _HELD_OUT_2_CHATTER, _HELD_OUT_2_NOISE_LINES
)
HELD_OUT_3_SURROUNDINGS = Surroundings(
    _HELD_OUT_3_FILLER, _HELD_OUT_3_WRAPS, _HELD_OUT_3_CHATTER, _HELD_OUT_3_NOISE_LINES
)
HELD_OUT_3_FINAL_SURROUNDINGS = Surroundings(
    _HELD_OUT_3_FINAL_FILLER,
    _HELD_OUT_3_FINAL_WRAPS,
    _HELD_OUT_2_CHATTER,
    _HELD_OUT_3_FINAL_NOISE_LINES,
)
HELD_OUT_4_SURROUNDINGS = Surroundings(
    _HELD_OUT_4_FILLER, _HELD_OUT_4_WRAPS, _HELD_OUT_4_CHATTER, _HELD_OUT_4_NOISE_LINES
)
HELD_OUT_4_FINAL_SURROUNDINGS = Surroundings(
    _HELD_OUT_4_FINAL_FILLER,
    _HELD_OUT_4_FINAL_WRAPS,
    _HELD_OUT_4_FINAL_CHATTER,
    _HELD_OUT_4_FINAL_NOISE_LINES,
)
DEV_C_SURROUNDINGS = Surroundings(_DEV_C_FILLER, _DEV_C_WRAPS, _DEV_C_CHATTER, _DEV_C_NOISE_LINES)
HELD_OUT_5_SURROUNDINGS = Surroundings(
    _HELD_OUT_5_FILLER, _HELD_OUT_5_WRAPS, _HELD_OUT_5_CHATTER, _HELD_OUT_5_NOISE_LINES
)


def _noise_token(rng: random.Random) -> str:
    return "NOISE" + "".join(rng.choice(string.ascii_uppercase) for _ in range(5))


def _code_listing(rng: random.Random, lines: int, noise: str, noise_lines: tuple[str, ...]) -> str:
    body = []
    for number in range(1, lines + 1):
        word = rng.choice(_WORDS)
        kind = rng.random()
        if kind < 0.05:
            body.append(f"{number}: " + rng.choice(noise_lines).format(noise=noise))
        elif kind < 0.15:
            body.append(f'{number}:     raise ValueError(f"bad {word}: {{value}}")')
        elif kind < 0.3:
            body.append(f"{number}: def {word}_{number}(items: list[str]) -> int:")
        else:
            body.append(f"{number}:     total += len({word})  # keeps the {word} count")
    return "\n".join(body)


def _log(rng: random.Random, lines: int, noise: str, noise_lines: tuple[str, ...]) -> str:
    body = []
    for number in range(lines):
        word = rng.choice(_WORDS)
        roll = rng.random()
        if roll < 0.06:
            body.append(rng.choice(noise_lines).format(noise=noise))
        elif roll < 0.12:
            body.append(f"tests/test_{word}.py::test_{word}_{number} PASSED")
        else:
            body.append(f"[{number:04d}] INFO {word} worker processed {rng.randint(1, 999)} rows")
    return "\n".join(body)


@dataclass(slots=True)
class SessionBuilder:
    """Builds one session's wire messages round by round, in one of three shapes."""

    shape: str
    rng: random.Random
    surround: Surroundings = DEV_SURROUNDINGS
    messages: list[dict[str, Any]] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)
    calls: int = 0

    def user(self, text: str) -> None:
        if self.shape == "text_action" and self.messages and self._last_was_action():
            # A person speaks after the agent stopped to report, not after an action.
            self.assistant_text("I have finished this step; tell me if you want anything else.")
        self.messages.append({"role": "user", "content": text})

    def assistant_text(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def _last_was_action(self) -> bool:
        return self.messages[-1].get("observation") is True

    def tool_round(self) -> None:
        """One action and its (long) output, with rule-like noise inside."""
        rng = self.rng
        noise = _noise_token(rng)
        self.noise.append(noise)
        word = rng.choice(_WORDS)
        path = f"src/{word}/{rng.choice(_WORDS)}_{rng.randint(1, 99)}.py"
        if rng.random() < 0.5:
            name, args = "read_file", {"path": path}
            output = _code_listing(rng, rng.randint(30, 120), noise, self.surround.noise_lines)
        else:
            name, args = "bash", {"command": f"pytest -q tests/test_{word}.py"}
            output = _log(rng, rng.randint(30, 120), noise, self.surround.noise_lines)
        chatter = rng.choice(self.surround.chatter)
        self.calls += 1
        call_id = f"call_{self.calls}"
        if self.shape == "openai":
            self.messages.append(
                {
                    "role": "assistant",
                    "content": chatter,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                    ],
                }
            )
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        elif self.shape == "anthropic":
            self.messages.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": chatter},
                        {"type": "tool_use", "id": call_id, "name": name, "input": args},
                    ],
                }
            )
            self.messages.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}],
                }
            )
        else:
            command = args.get("command") or f"cat {args['path']}"
            self.messages.append(
                {
                    "role": "assistant",
                    "content": f"{chatter}\n\n<function=execute_bash>\n<parameter=command>"
                    f"{command}</parameter>\n</function>",
                }
            )
            self.messages.append(
                {
                    "role": "user",
                    "content": f"EXECUTION RESULT of [execute_bash]:\n{output}\n"
                    "[The command completed with exit code 0.]",
                    "observation": True,
                }
            )

    def wire(self) -> list[dict[str, Any]]:
        """The messages as sent: the private `observation` mark removed."""
        return [{k: v for k, v in m.items() if k != "observation"} for m in self.messages]


@dataclass(frozen=True, slots=True)
class Planting:
    canary: Canary
    # Message index of the canary and of its update (None: never updated).
    at: int
    update_at: int | None


@dataclass(frozen=True, slots=True)
class Session:
    shape: str
    # Messages present at the end of each round (cumulative: round r has rounds 1..r).
    rounds: tuple[list[dict[str, Any]], ...]
    plantings: tuple[Planting, ...]
    noise: tuple[str, ...]


def build_session(seed: int, canary_set: str, shape: str, rounds_total: int = ROUNDS) -> Session:
    """A session of `rounds_total` rounds with every canary planted (and some updated) in
    the first five; later rounds are work and filler only."""
    offset = SETS[canary_set][3]
    rng = random.Random(seed * 104729 + 17 * offset + len(shape))
    canaries = make_canaries(seed, canary_set)
    surround = {
        "held-out": HELD_OUT_SURROUNDINGS,
        "held-out-2": HELD_OUT_2_SURROUNDINGS,
        "held-out-3": HELD_OUT_3_SURROUNDINGS,
        "held-out-3-final": HELD_OUT_3_FINAL_SURROUNDINGS,
        "held-out-4": HELD_OUT_4_SURROUNDINGS,
        "held-out-4-final": HELD_OUT_4_FINAL_SURROUNDINGS,
        "dev-c": DEV_C_SURROUNDINGS,
        "dev-d": DEV_C_SURROUNDINGS,
        "held-out-5": HELD_OUT_5_SURROUNDINGS,
    }.get(canary_set, DEV_SURROUNDINGS)
    # The issue-24 second-pass sets plant over rounds 1-4 (not 1-3): varied depths, some
    # canaries folded only in the last rounds, some updates folded in the round they land.
    spread = (
        4
        if canary_set.startswith("held-out-4") or canary_set in ("dev-c", "dev-d", "held-out-5")
        else 3
    )
    goals = [c for c in canaries if c.kind == "goal"]
    others = [c for c in canaries if c.kind != "goal"]
    rng.shuffle(others)
    builder = SessionBuilder(shape, rng, surround)
    # Where each canary goes: goal 1 opens round 1, the others spread over rounds 1-3,
    # later goals (task changes) in rounds 2-4, updates one or two rounds after.
    schedule: dict[int, list[tuple[str, Canary]]] = {r: [] for r in range(1, rounds_total + 1)}
    for index, canary in enumerate(others):
        schedule[1 + index % spread].append(("plant", canary))
    for index, canary in enumerate(goals[1:]):
        schedule[2 + index % 3].append(("plant", canary))
    for canary in canaries:
        if canary.update is not None:
            planted_round = next(
                (r for r, items in schedule.items() if ("plant", canary) in items), 1
            )
            schedule[min(ROUNDS, planted_round + rng.randint(1, 2))].append(("update", canary))
    at: dict[int, int] = {}
    update_at: dict[int, int] = {}
    rounds: list[list[dict[str, Any]]] = []
    builder.user(
        rng.choice(("", "Hi! ", "Morning. ")) + goals[0].text + " Start by reading the code."
    )
    at[id(goals[0])] = 0
    for number in range(1, rounds_total + 1):
        items = schedule[number]
        rng.shuffle(items)
        # Ten units of work a round; more when a round holds more canaries than that (the
        # deeper spread of the held-out-4 sets can put 11 in round 4).
        work_units = max(10, len(items))
        slots = sorted(rng.sample(range(work_units), min(len(items), work_units)))
        queue = list(items)
        for unit in range(work_units):
            for _ in range(rng.randint(1, 3)):
                builder.tool_round()
            while queue and slots and slots[0] == unit:
                slots.pop(0)
                action, canary = queue.pop(0)
                text = canary.text if action == "plant" else canary.update.text  # type: ignore[union-attr]
                wrap = rng.choice(surround.wraps)
                log = ""
                if "{log}" in wrap:
                    builder.noise.append(_noise_token(rng))
                    log = _log(rng, rng.randint(4, 12), builder.noise[-1], surround.noise_lines)
                builder.user(wrap.format(c=text, log=log))
                (at if action == "plant" else update_at)[id(canary)] = len(builder.messages) - 1
                builder.assistant_text(rng.choice(surround.chatter))
            if rng.random() < 0.3:
                builder.user(rng.choice(surround.filler))
                builder.assistant_text(rng.choice(surround.chatter))
        for _action, canary in queue:
            raise AssertionError(f"unscheduled canary {canary.text}")
        rounds.append(builder.wire())
    plantings = tuple(Planting(c, at[id(c)], update_at.get(id(c))) for c in canaries)
    return Session(shape, tuple(rounds), plantings, tuple(builder.noise))
