"""Every domain error class has its own problem type; an unmapped one is a 500, never 400."""

from __future__ import annotations

import importlib
import pkgutil

import app
from app.api.problems import INTERNAL_ERROR, PROBLEM_TYPES, documented, problem_type_for
from app.engine.errors import CompactorError, SummarizerError, SummaryTruncatedError


def _all_subclasses(base: type[CompactorError]) -> set[type[CompactorError]]:
    found: set[type[CompactorError]] = set()
    pending = [base]
    while pending:
        for sub in pending.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                pending.append(sub)
    return found


def test_every_error_class_in_app_is_mapped_explicitly() -> None:
    for module in pkgutil.walk_packages(app.__path__, "app."):
        importlib.import_module(module.name)
    defined = {k for k in _all_subclasses(CompactorError) if k.__module__.startswith("app.")}
    assert len(defined) >= 15
    missing = sorted(k.__qualname__ for k in defined - set(PROBLEM_TYPES))
    assert missing == [], f"add these to PROBLEM_TYPES in app/api/problems.py: {missing}"


def test_an_unmapped_error_is_an_internal_error_not_a_bad_request() -> None:
    class Unforeseen(CompactorError):
        pass

    assert problem_type_for(Unforeseen("x")) == INTERNAL_ERROR
    assert problem_type_for(Unforeseen("x")).status == 500


def test_a_subclass_takes_its_own_entry_and_a_new_one_falls_back_to_its_base() -> None:
    class NewSummarizerFailure(SummarizerError):
        pass

    assert problem_type_for(SummaryTruncatedError("x")) is PROBLEM_TYPES[SummaryTruncatedError]
    assert problem_type_for(NewSummarizerFailure("x")) is PROBLEM_TYPES[SummarizerError]


def test_documented_statuses_come_from_the_map_subclasses_included() -> None:
    statuses = documented(SummarizerError)
    assert set(statuses) == {502, 503, 504}
    assert "Summarizer timed out" in statuses[504]["description"]
