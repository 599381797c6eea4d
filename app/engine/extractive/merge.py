"""Merging a previous summary with what the folded messages say, within token budgets.

The previous summary's items come first and stay unless something newer replaces them: a
later user statement that changes a value replaces the earlier one (quoted as replaced),
later requests are added to the Goal, the first error is kept beside the newest ones, and
every section is fitted to its token budget with the least informative items going first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from app.engine.extractive.budget import (
    SectionBudgets,
    fit,
    fit_leading,
    fit_newest,
    informativeness,
    tokens,
)
from app.engine.extractive.sections import DoneAction, SummarySections
from app.engine.extractive.statements import rule_strength
from app.engine.extractive.text import cap, code_span, identity_key, one_line
from app.engine.extractive.transcript import ItemKind, TranscriptFacts
from app.engine.extractive.updates import (
    NAMES_OLD_VALUE,
    main_text,
    replaced_text,
    same_form_values,
    says_change,
    sets_a_value,
    subject_words,
    supersedes,
    with_replaced,
)

RESOLVE_STEP = "Resolve the latest error:"
REQUEST_STEP = "Continue with the latest user request:"
_FOCUS_CHARS = 500
_MAX_STEPS = 6
# The request is in the Goal already; the step only has to say which one.
_STEP_REQUEST_CHARS = 160


def unique_items(items: Iterable[str]) -> tuple[str, ...]:
    """Items without repeats (same words, any case or spacing), first occurrence kept."""
    by_key: dict[str, str] = {}
    for item in items:
        by_key.setdefault(identity_key(main_text(item)), item)
    return tuple(by_key.values())


def unique_paths(previous: Sequence[str], new: Sequence[str]) -> tuple[str, ...]:
    # Paths compare exactly: `a/B.py` and `a/b.py` can be different files.
    return tuple(dict.fromkeys([*previous, *new]))


@dataclass(slots=True)
class _UserSaid:
    """Goals, rules and facts being merged, in the order they were said."""

    goals: list[str]
    rules: list[str]
    facts: list[str]
    replaced: dict[str, str] = field(default_factory=dict)
    # The user message each rule and fact came from (-1: the previous summary).
    said_in: dict[str, int] = field(default_factory=dict)

    def drop_replaced(self) -> None:
        """Items an earlier update already replaced (a summary may still carry both, e.g.
        a model's) are not current: only the item that replaced them stays."""
        by_old = {
            identity_key(old): item
            for item in [*self.rules, *self.facts]
            if (old := replaced_text(item)) is not None
        }
        for pool in (self.rules, self.facts):
            for item in list(pool):
                newer = by_old.get(identity_key(main_text(item)))
                if newer is not None and newer != item:
                    pool.remove(item)
                    self.replaced[main_text(item)] = newer

    def add(self, kind: ItemKind, text: str, message: int) -> None:
        if self._already_replaced(text):
            # Read again (the tail it was kept in is folded now) after an update replaced
            # it: it is not current, and the item that replaced it already quotes it.
            return
        best: tuple[float, list[str], int] | None = None
        # A rule or a fact changes a value; a request adds work ("New request: rename …"
        # replaces nothing) unless it names the old value ("Update on the port: 3912, not
        # 8135") or sets one ("Make the SSH port 4411 instead").
        changes_value = kind in (ItemKind.RULE, ItemKind.FACT) or sets_a_value(text)
        floor = 0.0 if changes_value else NAMES_OLD_VALUE
        candidates = self._candidates(message)
        uses = Counter(
            w
            for pool, _index, item in candidates
            if pool is not self.goals
            for w in subject_words(main_text(item))
        )
        for pool, index, earlier in candidates:
            if pool is self.goals:
                continue
            score = supersedes(text, earlier, uses)
            if score and score >= floor and (best is None or score > best[0]):
                best = (score, pool, index)
        if best is None and kind is ItemKind.FACT and says_change(text):
            # "Turns out the CI machine is b.internal" after "The build server lives at
            # a.internal": no subject word in common. When exactly one earlier item holds
            # a value of the new one's form, that is the one it changes; with several, it
            # would be a guess, and none is replaced. Only for a plain statement: a rule
            # with a change word in it ("leave it alone no matter what") is a new rule.
            same_form = [
                (pool, index)
                for pool in (self.rules, self.facts)
                for index, earlier in enumerate(pool)
                if self.said_in.get(earlier, -1) < message and same_form_values(text, earlier)
            ]
            if len(same_form) == 1:
                best = (0.5, *same_form[0])
        for pool, index, earlier in candidates if best is None else ():
            # Only when no rule or fact is the one it changes: a request is work, not a
            # value, and only an update that names the old value, or says what it is about
            # in two of its words, replaces one ("The table is read-only; no UPDATE
            # statements" changes no "rename `x` to something readable").
            if pool is not self.goals:
                continue
            score = supersedes(text, earlier, uses)
            if score < NAMES_OLD_VALUE and not _shares_words(text, earlier):
                continue
            if score and score >= floor and (best is None or score > best[0]):
                best = (score, pool, index)
        target = {ItemKind.RULE: self.rules, ItemKind.FACT: self.facts}.get(kind, self.goals)
        if best is not None:
            _score, pool, index = best
            earlier = pool[index]
            replacing = with_replaced(text, earlier)
            if pool is self.goals and target is not self.goals:
                # A later request that a rule or a fact changes ("Please write changelog
                # entries in CHF-style" → "Make the changelog style NZD instead"): the
                # request is no longer current, the rule that replaces it goes with rules.
                del pool[index]
                target.append(replacing)
            else:
                pool[index] = replacing
            self.said_in[replacing] = message
            self.replaced[main_text(earlier)] = replacing
            return
        key = identity_key(text)
        if all(identity_key(main_text(t)) != key for t in target):
            target.append(text)
            self.said_in[text] = message

    def _candidates(self, message: int) -> list[tuple[list[str], int, str]]:
        """Items said before `message` that a statement in it may change: rules, facts and
        the later requests (not the task itself, which the Goal always keeps)."""
        return [
            (pool, index, item)
            for pool, first in ((self.rules, 0), (self.facts, 0), (self.goals, 1))
            for index, item in enumerate(pool)
            if index >= first and self.said_in.get(item, -1) < message
        ]

    def _already_replaced(self, text: str) -> bool:
        key = identity_key(text)
        if any(identity_key(old) == key for old in self.replaced):
            return True
        return any(
            old is not None and identity_key(old) == key
            for old in map(replaced_text, [*self.rules, *self.facts])
        )


def _shares_words(new: str, old: str) -> bool:
    """Whether two statements share two words of what they are about (not only kinds)."""
    shared = subject_words(new) & subject_words(main_text(old))
    return len({w for w in shared if not w.startswith("@")}) >= 2


@dataclass(frozen=True, slots=True)
class Merged:
    """The merged sections, and which earlier statements newer ones replaced."""

    sections: SummarySections
    # Earlier statement → the item that now stands for it.
    replaced: dict[str, str]


def merge(
    previous: SummarySections,
    facts: TranscriptFacts,
    instructions: str | None,
    budgets: SectionBudgets,
) -> Merged:
    """`previous` updated with `facts`, each section within its budget."""
    base = previous
    for carried in facts.carried:
        base = _absorbed(base, carried, has_opening=facts.opening is not None)
    said = _UserSaid(list(base.goals), list(base.constraints), list(base.facts))
    said.drop_replaced()
    opening_is_goal = not said.goals and facts.opening is not None
    if facts.opening is not None and opening_is_goal:
        said.goals.append(facts.opening.goal)
    elif facts.opening is not None and facts.opening.request:
        # A later request like any other: it may change a value said before.
        said.add(ItemKind.REQUEST, facts.opening.request, 1)
    for item in facts.user_items:
        goal_holds_it = item.kind is ItemKind.FACT or item.in_goal_text
        if item.in_opening and goal_holds_it and opening_is_goal:
            # The Goal quotes the opening request: its facts are there, up to the Goal's
            # budget (a long issue text is cut there, with a note of how much).
            continue
        said.add(item.kind, item.text, item.message)
    done, done_merged = _merged_done(base.done, base.done_merged, facts.actions, budgets.done)
    first_error = base.first_error or next(iter([*base.errors, *facts.errors]), None)
    later_errors = [e for e in [*base.errors, *facts.errors] if e != first_error]
    read, modified = _files(base, facts, budgets.files)
    steps = _next_steps(facts, base.next_steps, said.goals)
    in_progress = facts.todos_in_progress or facts.plan[:1] or base.in_progress
    sections = SummarySections(
        goals=_fit_goals(said.goals, budgets.goal),
        constraints=fit(said.rules, budgets.constraints, score=_rule_worth),
        done=done,
        done_merged=done_merged,
        in_progress=fit_newest(in_progress, budgets.in_progress),
        blocked=_blocked(base, facts),
        decisions=fit_leading(
            unique_items([*reversed(facts.decisions), *base.decisions]), budgets.decisions
        ),
        next_steps=_fit_steps(steps, budgets.next_steps),
        focus=cap(one_line(instructions), _FOCUS_CHARS) if instructions else None,
        files_read=read,
        files_modified=modified,
        first_error=first_error,
        errors=fit_newest(_newest_distinct(later_errors), budgets.errors),
        facts=fit(said.facts, budgets.facts),
        context=fit_newest(unique_items(base.context), budgets.context),
    )
    return Merged(_within_total(sections, budgets.total), said.replaced)


def _rule_worth(rule: str) -> float:
    # A firm rule outlasts advice ("we recommend …") whatever values either carries.
    return informativeness(rule) + 4 * rule_strength(rule)


def _absorbed(
    base: SummarySections, carried: SummarySections, has_opening: bool
) -> SummarySections:
    """`base` with a summary another agent left inside the folded messages: its rules,
    files and pending work; its request only when nothing else says what the task is."""
    goals = base.goals or (() if has_opening else carried.goals)
    return replace(
        base,
        goals=goals,
        constraints=unique_items([*base.constraints, *carried.constraints]),
        done=(*base.done, *carried.done),
        in_progress=carried.in_progress or base.in_progress,
        decisions=unique_items([*carried.decisions, *base.decisions]),
        next_steps=carried.next_steps or base.next_steps,
        files_read=unique_paths(base.files_read, carried.files_read),
        files_modified=unique_paths(base.files_modified, carried.files_modified),
        context=unique_items([*base.context, *carried.context]),
    )


def _fit_goals(goals: Sequence[str], budget: int) -> tuple[str, ...]:
    """The task first, always; then the later requests that fit, the newest kept last."""
    goals = unique_items(goals)
    if not goals:
        return ()
    first, later = goals[0], list(goals[1:])
    rest = fit(later, budget - tokens(first), keep=lambda index: index == len(later) - 1)
    return (first, *rest)


def _merged_done(
    previous: Sequence[DoneAction], merged: int, actions: Sequence[str], budget: int
) -> tuple[tuple[DoneAction, ...], int]:
    """Repeated actions collapse into one line with a count, placed at their latest run;
    the oldest are folded into a count when the list is over its budget."""
    by_key: dict[str, DoneAction] = {}
    for action in [*previous, *(DoneAction(a) for a in actions)]:
        key = identity_key(action.text)
        earlier = by_key.pop(key, None)
        by_key[key] = DoneAction(action.text, action.count + (earlier.count if earlier else 0))
    kept = list(by_key.values())
    used = sum(tokens(a.text) + 2 for a in kept)
    dropped = 0
    while kept and used > budget:
        oldest = kept.pop(0)
        used -= tokens(oldest.text) + 2
        dropped += oldest.count
    return tuple(kept), merged + dropped


def _files(
    base: SummarySections, facts: TranscriptFacts, budget: int
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Files modified and files only read; reads give way first, the oldest first."""
    modified = list(unique_paths(base.files_modified, facts.files_modified))
    changed = set(modified)
    read = [p for p in unique_paths(base.files_read, facts.files_read) if p not in changed]
    used = sum(tokens(p) for p in [*modified, *read])
    while read and used > budget:
        used -= tokens(read.pop(0))
    while len(modified) > 1 and used > budget:
        used -= tokens(modified.pop(0))
    return tuple(read), tuple(modified)


def _newest_distinct(errors: Sequence[str]) -> list[str]:
    """Errors oldest first, each at its latest occurrence."""
    return list(reversed(unique_items(reversed(errors))))


def _blocked(previous: SummarySections, facts: TranscriptFacts) -> tuple[str, ...]:
    # With no new tool results, nothing says whether the old blocker was resolved.
    if not facts.saw_tool_result:
        return previous.blocked
    if facts.last_result_error is None:
        return ()
    return (f"Latest tool call failed: {code_span(facts.last_result_error)}",)


def _next_steps(facts: TranscriptFacts, previous: Sequence[str], goals: Sequence[str]) -> list[str]:
    steps: list[str] = []
    if facts.last_result_error:
        steps.append(f"{RESOLVE_STEP} {code_span(facts.last_result_error)}")
    if facts.unanswered_request:
        steps.append(f"{REQUEST_STEP} {cap(facts.unanswered_request, _STEP_REQUEST_CHARS)}")
    planned = [*facts.todos_pending, *facts.plan]
    if planned:
        return [*steps, *planned]
    # Without a newer plan the earlier one still stands, after anything urgent; its own
    # error and request steps are stale once newer results or turns arrived.
    stale: list[str] = []
    if facts.saw_tool_result:
        stale.append(RESOLVE_STEP)
    if facts.unanswered_request or facts.user_items or facts.opening:
        stale.append(REQUEST_STEP)
    kept = [s for s in previous if not s.startswith(tuple(stale))]
    steps += kept
    if not steps and goals:
        steps.append(f"Continue the task: {cap(one_line(goals[-1]), 300)}")
    return steps


def _fit_steps(steps: Sequence[str], budget: int) -> tuple[str, ...]:
    kept: list[str] = []
    used = 0
    for step in unique_items(steps)[:_MAX_STEPS]:
        if used + tokens(step) > budget and kept:
            break
        kept.append(step)
        used += tokens(step)
    return tuple(kept)


def summary_tokens(s: SummarySections) -> int:
    """Estimated tokens of the rendered sections (items plus their markers)."""
    items = [
        *s.goals,
        *s.constraints,
        *(a.text for a in s.done),
        *s.in_progress,
        *s.blocked,
        *s.decisions,
        *s.next_steps,
        *s.files_read,
        *s.files_modified,
        *(e for e in [s.first_error] if e),
        *s.errors,
        *s.facts,
        *s.context,
    ]
    # Headings and the "(none)" lines cost about 60 tokens; each item about 2 more.
    return 60 + sum(tokens(i) + 2 for i in items)


def _within_total(s: SummarySections, total: int) -> SummarySections:
    """Sections shrunk until the whole summary fits `total`: progress and decisions give
    way first, the user's words last."""
    order = ("done", "decisions", "files_read", "context", "in_progress", "facts", "errors")
    used = summary_tokens(s)
    for name in order:
        while used > total and getattr(s, name):
            items = getattr(s, name)
            s = replace(s, **{name: items[1:]})
            dropped = items[0].text if isinstance(items[0], DoneAction) else items[0]
            used -= tokens(dropped) + 2
    while used > total and len(s.goals) > 2:
        used -= tokens(s.goals[1]) + 2
        s = replace(s, goals=(s.goals[0], *s.goals[2:]))
    while used > total and len(s.files_modified) > 1:
        used -= tokens(s.files_modified[0]) + 2
        s = replace(s, files_modified=s.files_modified[1:])
    if used > total and s.constraints:
        room = sum(tokens(c) for c in s.constraints) - (used - total)
        s = replace(s, constraints=fit(s.constraints, max(0, room)))
    return s
