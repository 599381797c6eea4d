"""Pinned facts and split turns: what every summary gets after its summarizer is done."""

from __future__ import annotations

import json
from typing import Any

from app.engine.compaction.fidelity import finish_summary
from app.engine.compaction.orchestration import CompactionPlan
from app.engine.compaction.pinned import (
    FactKind,
    PinnedFact,
    collect_pinned_facts,
    restore_pinned_facts,
)
from app.engine.compaction.prompts import SUMMARY_SECTIONS
from app.engine.compaction.split_turn import (
    CURRENT_REQUEST_HEADING,
    split_turn_request,
    with_current_request,
)
from app.engine.extractive.sections import parse_summary
from app.engine.extractive.summarizer import extractive_summary
from app.engine.messages import Block, BlockKind, Message, Role
from tests.unit.factories import user

RULE = "Never edit the generated files in `gen/`."
MINIMAL = "\n\n".join(
    [
        "## Goal\n- Fix the parser",
        "## Constraints & Preferences\n- (none)",
        "## Progress\n### Done\n- [x] Read it\n### In Progress\n- (none)\n### Blocked\n- (none)",
        "## Key Decisions\n- (none)",
        "## Next Steps\n1. Continue",
        "## Critical Context\n- (none)",
    ]
)


def assistant(text: str = "", *calls: Block) -> Message:
    blocks = (Block(kind=BlockKind.TEXT, text=text),) if text else ()
    return Message(role=Role.ASSISTANT, blocks=blocks + calls)


def call(call_id: str, name: str, **arguments: Any) -> Block:
    return Block(
        kind=BlockKind.TOOL_CALL,
        tool_call_id=call_id,
        tool_name=name,
        arguments=json.dumps(arguments),
    )


def result(call_id: str, text: str, *, is_error: bool = False) -> Message:
    block = Block(kind=BlockKind.TOOL_RESULT, tool_call_id=call_id, text=text, is_error=is_error)
    return Message(role=Role.TOOL, blocks=(block,))


def history() -> list[Message]:
    return [
        user(f"Fix the crash in the parser. {RULE}"),
        assistant("Let me look.", call("c1", "Read", file_path="src/parser.py")),
        result("c1", "def parse(text): ..."),
        assistant(
            "", call("c2", "Edit", file_path="src/parser.py", old_string="a", new_string="b")
        ),
        result("c2", "updated"),
        assistant("", call("c3", "Bash", command="pytest -q")),
        result("c3", "E   ValueError: empty input\n1 failed", is_error=True),
        assistant("The test still fails; I'll handle empty input."),
    ]


def section(summary: str, heading: str) -> str:
    lines = summary.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end]).strip()


def plan(to_summarize: list[Message], kept: list[Message], previous: str | None = None) -> Any:
    return CompactionPlan(
        first_summarized=0,
        cut_index=len(to_summarize),
        previous_summary=previous,
        to_summarize=tuple(to_summarize),
        kept=tuple(kept),
    )


def test_facts_are_the_goal_constraints_files_and_errors_of_the_history() -> None:
    facts = collect_pinned_facts(history(), None, ["Deploys go through `make release`."])
    assert PinnedFact(FactKind.GOAL, "Fix the crash in the parser.") in facts
    assert PinnedFact(FactKind.CONSTRAINT, RULE) in facts
    assert PinnedFact(FactKind.PINNED, "Deploys go through `make release`.") in facts
    # Read and then changed: listed once, as modified.
    assert PinnedFact(FactKind.FILE_MODIFIED, "src/parser.py") in facts
    assert PinnedFact(FactKind.FILE_READ, "src/parser.py") not in facts
    assert PinnedFact(FactKind.ERROR, "E   ValueError: empty input") in facts


def test_a_summary_that_forgot_everything_gets_each_fact_in_its_section() -> None:
    facts = collect_pinned_facts(history(), None, ["Deploys go through `make release`."])
    restored_text, restored = restore_pinned_facts(MINIMAL, facts)
    assert set(restored) == set(facts)
    constraints = section(restored_text, "## Constraints & Preferences")
    assert constraints == f"- {RULE}"  # the "(none)" line went
    context = section(restored_text, "## Critical Context")
    assert "- Pinned: Deploys go through `make release`." in context
    parsed = parse_summary(restored_text)
    assert parsed.files_modified == ("src/parser.py",)
    assert parsed.first_error == "E   ValueError: empty input"
    assert "- Fix the crash in the parser." in section(restored_text, "## Goal")
    # The summarizer's own text stays, in order; the section order is unchanged.
    positions = [restored_text.index(h + "\n") for h in SUMMARY_SECTIONS]
    assert positions == sorted(positions)
    assert "- Fix the parser" in restored_text and "1. Continue" in restored_text


def test_present_facts_are_not_added_again_even_when_reflowed() -> None:
    facts = [PinnedFact(FactKind.CONSTRAINT, "Keep the public parse() signature unchanged.")]
    reflowed = MINIMAL.replace(
        "## Constraints & Preferences\n- (none)",
        "## Constraints & Preferences\n- Keep the public parse()\n  signature unchanged.",
    )
    text, restored = restore_pinned_facts(reflowed, facts)
    assert restored == () and text == reflowed


def test_a_constraint_in_the_wrong_section_is_restored_into_its_own() -> None:
    facts = [PinnedFact(FactKind.CONSTRAINT, RULE)]
    elsewhere = MINIMAL.replace("## Key Decisions\n- (none)", f"## Key Decisions\n- {RULE}")
    text, restored = restore_pinned_facts(elsewhere, facts)
    assert restored == tuple(facts)
    assert RULE in section(text, "## Constraints & Preferences")


def test_missing_sections_are_created_where_they_belong() -> None:
    facts = [PinnedFact(FactKind.CONSTRAINT, RULE), PinnedFact(FactKind.FILE_READ, "a.py")]
    text, _ = restore_pinned_facts("## Goal\n- x\n\n## Progress\n### Done\n- [x] y", facts)
    assert text.index("## Constraints & Preferences") < text.index("## Progress")
    assert text.rstrip().endswith("## Critical Context\n- Files read: `a.py`")


def test_finishing_twice_changes_nothing_the_second_time() -> None:
    once = finish_summary(MINIMAL, plan(history(), [user("next")]), ["pin me"])
    twice = finish_summary(once.text, plan(history(), [user("next")]), ["pin me"])
    assert once.restored and twice.restored == () and twice.text == once.text


def test_facts_of_the_previous_summary_are_carried_even_by_a_forgetful_summarizer() -> None:
    first = finish_summary(MINIMAL, plan(history(), [user("next")]))
    later = [user("Now look at the lexer."), assistant("", call("c9", "Read", file_path="lex.py"))]
    second = finish_summary(MINIMAL, plan(later, [result("c9", "...")], first.text))
    assert RULE in section(second.text, "## Constraints & Preferences")
    parsed = parse_summary(second.text)
    assert parsed.files_read == ("lex.py",)
    assert parsed.files_modified == ("src/parser.py",)
    assert parsed.first_error == "E   ValueError: empty input"
    goal = section(second.text, "## Goal")
    assert "- Fix the crash in the parser." in goal and "- Now look at the lexer." in goal


def test_the_first_error_and_the_newest_ones_are_pinned() -> None:
    detail = " ".join(f"frame{k}" for k in range(30))
    errors = [result(f"e{i}", f"RuntimeError: failure number {i} in {detail}") for i in range(12)]
    pinned = [f.text for f in collect_pinned_facts(errors, None) if f.kind is FactKind.ERROR]
    assert pinned[0].startswith("RuntimeError: failure number 0 ")
    assert pinned[-1].startswith("RuntimeError: failure number 11 ")
    # Within the errors' token budget: the ones in between go first.
    assert 2 < len(pinned) < 12


def test_the_extractive_summary_needs_no_restoring() -> None:
    summary = extractive_summary(history(), None, None)
    finished = finish_summary(summary, plan(history(), [user("next")]))
    assert finished.restored == ()


# --- split turns -------------------------------------------------------------------------


def test_a_cut_inside_a_turn_quotes_its_request() -> None:
    request = "Rename `Parser.feed` to `Parser.push` everywhere, then run the tests."
    turn = [
        user(request),
        assistant("", call("c1", "Grep", pattern="feed")),
        result("c1", "src/parser.py:10"),
    ]
    kept = [assistant("", call("c2", "Edit", file_path="src/parser.py")), result("c2", "ok")]
    found = split_turn_request([*history(), *turn], kept, None)
    assert found == request
    # A summary that does not hold the request gets it quoted at its end.
    quoted = with_current_request(MINIMAL, found)
    assert quoted.endswith(f"> {request}")
    assert f"> {request}" in section(quoted, CURRENT_REQUEST_HEADING)


def test_a_request_restored_into_the_goal_is_not_quoted_twice() -> None:
    request = "Rename `Parser.feed` to `Parser.push` everywhere, then run the tests."
    turn = [user(request), assistant("", call("c1", "Grep", pattern="feed"))]
    kept = [result("c1", "src/parser.py:10"), assistant("Now the edit.")]
    finished = finish_summary(MINIMAL, plan(turn, kept))
    assert finished.current_request == request
    assert section(finished.text, "## Goal").endswith(f"- {request}")
    assert CURRENT_REQUEST_HEADING not in finished.text


def test_a_cut_between_turns_quotes_nothing_and_drops_a_stale_section() -> None:
    stale = f"{MINIMAL}\n\n{CURRENT_REQUEST_HEADING}\nold\n> an old request"
    finished = finish_summary(stale, plan(history(), [user("A new request")]))
    assert finished.current_request is None
    assert CURRENT_REQUEST_HEADING not in finished.text and "an old request" not in finished.text


def test_a_turn_longer_than_one_compaction_keeps_its_request() -> None:
    request = "Port every module to the new logging API."
    first = finish_summary(
        MINIMAL,
        plan(
            [user(request), assistant("", call("c1", "Read", file_path="a.py"))],
            [result("c1", "..."), assistant("next file")],
        ),
    )
    more = [
        result("c1", "..."),
        assistant("", call("c2", "Read", file_path="b.py")),
        result("c2", ""),
    ]
    second = finish_summary(MINIMAL, plan(more, [assistant("done with b")], first.text))
    assert second.current_request == request
    assert request in second.text


def test_a_request_the_summary_holds_word_for_word_is_not_quoted_again() -> None:
    request = "Fix the crash in the parser."
    summary = MINIMAL.replace("- Fix the parser", f"- {request}")
    kept = [assistant("", call("c2", "Edit", file_path="src/parser.py"))]
    finished = finish_summary(summary, plan([user(request)], kept))
    assert finished.current_request == request
    assert CURRENT_REQUEST_HEADING not in finished.text


def test_the_current_request_is_not_carried_into_other_sections() -> None:
    with_request = f"{MINIMAL}\n\n{CURRENT_REQUEST_HEADING}\nintro\n> Do the thing."
    assert "Do the thing." not in extractive_summary([user("ok")], with_request, None)


def test_harness_text_and_tool_results_do_not_start_a_turn() -> None:
    to_summarize = [
        user("Add retries to the HTTP client."),
        assistant("", call("c1", "Read", file_path="http.py")),
        result("c1", "..."),
        user("<system-reminder>todo list updated</system-reminder>"),
    ]
    kept = [assistant("Now the retries.")]
    assert split_turn_request(to_summarize, kept, None) == "Add retries to the HTTP client."
