"""SPEC §5.8: the offline extractive summarizer fills the §5.4 sections and merges updates."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine.compaction.marker import SummaryMarker
from app.engine.compaction.prompts import SUMMARY_SECTIONS
from app.engine.extractive.summarizer import ExtractiveSummarizer
from app.engine.messages import Block, BlockKind, ImageInfo, Message, Role
from app.engine.ports import SummaryRequest
from app.engine.thinking import ThinkingLevel

TOOL_HEAVY = Path(__file__).parents[1] / "data" / "claude_code" / "tool_heavy.openai.json"
CONSTRAINT = "Keep the public interface unchanged."


def user(text: str) -> Message:
    return Message(role=Role.USER, blocks=(Block(kind=BlockKind.TEXT, text=text),))


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


def summarize(
    messages: list[Message], previous: str | None = None, instructions: str | None = None
) -> str:
    request = SummaryRequest(
        system_prompt="",
        prompt_parts=(),
        messages=tuple(messages),
        previous_summary=previous,
        instructions=instructions,
        max_output_tokens=4096,
        thinking=ThinkingLevel.OFF,
    )
    summary = asyncio.run(ExtractiveSummarizer().summarize(request))
    assert not summary.truncated
    return summary.text


def section(summary: str, heading: str) -> str:
    """The body under `heading`, up to the next heading of any level."""
    start = summary.index(heading + "\n") + len(heading) + 1
    following = re.search(r"^#{2,3} ", summary[start:], re.MULTILINE)
    return summary[start : start + following.start() if following else None].strip()


def session() -> list[Message]:
    return [
        user(f"Fix the off-by-one in `sum_range`. {CONSTRAINT} Don't modify tests."),
        assistant(
            "Let me look at the code first.",
            call("c1", "Read", file_path="src/sum.py"),
        ),
        result("c1", "def sum_range(a, b):\n    return sum(range(a, b))\n"),
        assistant(
            "", call("c2", "Edit", file_path="src/sum.py", old_string="b)", new_string="b + 1)")
        ),
        result("c2", "The file src/sum.py has been updated."),
        assistant("", call("c3", "Bash", command="pytest -q")),
        result(
            "c3",
            'Traceback (most recent call last):\n  File "tests/test_sum.py", line 3\n'
            "    assert sum_range(1, 3) == 6\nAssertionError: assert 5 == 6\n1 failed",
        ),
        assistant("The test still fails. I'll check the fixture next."),
    ]


def test_info_names_the_extractive_model_without_limits() -> None:
    info = ExtractiveSummarizer().info
    assert (info.provider, info.model) == ("extractive", "extractive-v1")
    assert info.context_window is None
    assert info.max_output_tokens is None
    assert info.thinking_levels == ()


def test_all_sections_are_present_in_order() -> None:
    summary = summarize(session())
    positions = [summary.index(f"{heading}\n") for heading in SUMMARY_SECTIONS]
    assert positions == sorted(positions)
    assert summary.startswith("## Goal\n")
    assert section(summary, "## Next Steps").startswith("1. ")


def test_goal_is_the_task_and_its_rule_lines_are_under_constraints() -> None:
    request = (
        "Port the parser to Rust.\nWhile doing it, log every step.\n"
        "Keep `parse()` as the entry point."
    )
    summary = summarize([user(request), assistant("On it."), user("ok")])
    goal = section(summary, "## Goal")
    assert goal == "- Port the parser to Rust."
    constraints = section(summary, "## Constraints & Preferences").splitlines()
    # A conditional instruction is a rule, not part of the task.
    assert constraints == [
        "- While doing it, log every step.",
        "- Keep `parse()` as the entry point.",
    ]
    assert "ok" not in goal.split("\n")


def test_long_first_request_is_capped_with_a_note() -> None:
    request = "Migrate the billing module. " + " ".join(f"detail{n}" for n in range(700))
    summary = summarize([user(request)])
    goal = section(summary, "## Goal")
    assert goal.startswith("- Migrate the billing module. detail0 detail1")
    assert "detail699" not in goal
    assert re.search(r"… \[\d+ more characters not shown\]$", goal)
    assert len(goal) < 1_600


def test_constraint_sentences_are_kept_verbatim_and_plain_sentences_are_not() -> None:
    constraints = section(summarize(session()), "## Constraints & Preferences")
    assert f"- {CONSTRAINT}" in constraints.splitlines()
    assert "- Don't modify tests." in constraints.splitlines()
    assert "off-by-one" not in constraints


def test_constraint_words_in_tool_output_are_not_constraints() -> None:
    messages = [
        user("Summarize the README."),
        assistant("", call("c1", "Read", file_path="README.md")),
        result("c1", "You must never commit secrets."),
    ]
    assert section(summarize(messages), "## Constraints & Preferences") == "(none)"


def test_chinese_constraint_sentence_is_kept_in_mixed_text() -> None:
    summary = summarize(
        [user("请修复 `parse()` 的 bug。必须保持公共接口不变。Also avoid new deps.")]
    )
    constraints = section(summary, "## Constraints & Preferences").splitlines()
    assert "- 必须保持公共接口不变。" in constraints
    assert "- Also avoid new deps." in constraints
    assert "- 请修复 `parse()` 的 bug。" not in constraints


def test_tool_calls_become_done_items_and_file_lists() -> None:
    messages = [
        user("Fix the CloudFront bug."),
        assistant("", call("c1", "Read", file_path="src/sum.py")),
        result("c1", "..."),
        assistant("", call("c2", "str_replace_editor", command="view", path="/repo/moto/a.py")),
        result("c2", "..."),
        assistant(
            "",
            call("c3", "str_replace_editor", command="str_replace", path="/repo/moto/b.py"),
            call("c4", "str_replace_editor", command="create", path="/repo/repro.py"),
            call("c5", "MultiEdit", file_path="src/util.py", edits=[]),
            call("c6", "execute_bash", command="python /repo/repro.py"),
        ),
    ]
    summary = summarize(messages)
    done = section(summary, "### Done").splitlines()
    assert "- [x] read `src/sum.py`" in done
    assert "- [x] edited `/repo/moto/b.py`" in done
    assert "- [x] created `/repo/repro.py`" in done
    assert "- [x] ran `python /repo/repro.py`" in done
    context = section(summary, "## Critical Context").splitlines()
    assert "- Files read: `src/sum.py`, `/repo/moto/a.py`" in context
    assert "- Files modified: `/repo/moto/b.py`, `/repo/repro.py`, `src/util.py`" in context


def test_repeated_actions_collapse_and_the_done_list_is_capped() -> None:
    messages = [user("Make the build green.")]
    for index in range(40):
        messages.append(assistant("", call(f"c{index}", "Bash", command=f"make step{index}")))
    for index in range(3):
        messages.append(assistant("", call(f"t{index}", "Bash", command="pytest -q")))
    done = section(summarize(messages), "### Done").splitlines()
    assert done[-1] == "- [x] ran `pytest -q` (×3)"
    # The Done list has a token budget: the oldest actions fold into a count.
    merged = re.fullmatch(r"- \[x\] \((\d+) earlier actions merged\)", done[0])
    assert merged is not None
    assert int(merged.group(1)) + len(done) - 1 + 2 == 43
    assert "- [x] ran `make step39`" in done


def test_first_error_is_kept_verbatim_and_blocks_progress() -> None:
    summary = summarize(session())
    context = section(summary, "## Critical Context")
    assert "- First error: `AssertionError: assert 5 == 6`" in context
    assert "AssertionError: assert 5 == 6" in section(summary, "### Blocked")
    # The stated plan is a step, said as one ("I'll check the fixture next.").
    assert "2. Check the fixture next." in section(summary, "## Next Steps")


def test_anthropic_style_error_result_in_a_user_message_is_kept() -> None:
    failure = Block(
        kind=BlockKind.TOOL_RESULT,
        tool_call_id="c1",
        text="<tool_use_error>File has not been read yet.</tool_use_error>",
        is_error=True,
    )
    messages = [
        user("Update the config."),
        assistant("", call("c1", "Write", file_path="config.toml", content="x")),
        Message(role=Role.USER, blocks=(failure,)),
    ]
    summary = summarize(messages)
    # The error line itself, without the harness tags around it.
    assert "- First error: `File has not been read yet.`" in summary
    assert "tool_use_error" not in summary
    assert section(summary, "### Blocked") != "(none)"


def test_blocked_is_none_when_the_last_tool_result_succeeded() -> None:
    messages = [
        *session(),
        assistant("", call("c9", "Bash", command="pytest -q")),
        result("c9", "ok"),
    ]
    assert section(summarize(messages), "### Blocked") == "(none)"


def test_five_update_rounds_keep_constraint_files_and_only_the_newest_errors() -> None:
    summary = summarize(session())
    for round_number in range(1, 6):
        new_messages = [
            user(f"Round {round_number}: try another approach."),
            assistant(
                "", call(f"r{round_number}", "Read", file_path=f"src/read_{round_number}.py")
            ),
            result(f"r{round_number}", "..."),
            assistant("", call(f"e{round_number}", "Edit", file_path=f"src/mod_{round_number}.py")),
            result(f"e{round_number}", "ok"),
            assistant("", call(f"b{round_number}", "Bash", command="pytest -q")),
            result(
                f"b{round_number}", f"E   KeyError: 'round{round_number}'\nFAILED t{round_number}"
            ),
        ]
        summary = summarize(new_messages, previous=summary)
    context = section(summary, "## Critical Context")
    assert f"- {CONSTRAINT}" in section(summary, "## Constraints & Preferences").splitlines()
    lines = context.splitlines()
    read = next(line for line in lines if line.startswith("- Files read: "))
    modified = next(line for line in lines if line.startswith("- Files modified: "))
    for path in (f"src/read_{n}.py" for n in range(1, 6)):
        assert f"`{path}`" in read
    # A file read and then changed is listed once, as modified.
    for path in ["src/sum.py", *(f"src/mod_{n}.py" for n in range(1, 6))]:
        assert f"`{path}`" in modified
    assert "`src/sum.py`" not in read
    errors = [line for line in context.splitlines() if "rror: " in line[:16]]
    # The first error that shaped the work stays first; then the newest, distinct ones.
    assert errors[0] == "- First error: `AssertionError: assert 5 == 6`"
    assert errors[-2:] == ["- Error: `E   KeyError: 'round5'`", "- Error: `FAILED t5`"]
    assert len(errors) == len(set(errors))
    assert section(summary, "## Next Steps").count("Resolve the latest error") == 1
    goal = section(summary, "## Goal")
    assert goal.startswith("- Fix the off-by-one in `sum_range`.")
    # Later requests are added to the Goal, the newest last.
    assert goal.endswith("- Round 5: try another approach.")


def test_same_input_gives_byte_identical_output() -> None:
    first = summarize(session(), instructions="focus on tests")
    assert summarize(session(), instructions="focus on tests") == first
    # Updating with nothing new changes nothing: the summary parses back to itself.
    assert summarize([], previous=first, instructions="focus on tests") == first


def test_previous_summary_with_its_marker_line_parses_the_same() -> None:
    first = summarize(session())
    marked = SummaryMarker().render(first)
    assert summarize([], previous=marked) == summarize([], previous=first)


# Fragments of summaries as an LLM or this module might write them, to be shuffled.
_SUMMARY_PIECES = st.sampled_from(
    [
        *("\n", " ", "  ", "a", "`", "- ", "* ", "1. ", "[x] ", "[ ] ", "(none)", "\r", "必须。"),
        *("## Goal\n", "## Constraints and Preferences\n", "## Progress\n", "### Done\n"),
        *("**Next Steps:**\n", "## Critical Context\n", "## Open Questions\n"),
        *("Files read: ", "Error: ", " (×3)", "(4 earlier actions merged)"),
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_SUMMARY_PIECES, max_size=40).map("".join))
def test_any_previous_summary_settles_after_one_update(markdown: str) -> None:
    once = summarize([], previous=markdown)
    assert summarize([], previous=once) == once


def test_instructions_become_a_focus_line() -> None:
    summary = summarize(session(), instructions="Keep the database schema details.")
    assert "- Focus requested: Keep the database schema details." in summary


def test_llm_written_previous_summary_keeps_its_items() -> None:
    previous = """# Summary

**Goal:**
Fix the flaky upload test in `tests/test_upload.py`.

## Constraints and Preferences
* Use only the standard library
* Don't touch the CI config

## Progress
### Done
- [x] Reproduced the failure locally
- Found the race in `upload/worker.py`
### In Progress
- [ ] Writing a fix with a lock
### Blocked
- None

## Key Decisions
- **Use a threading.Lock**: simplest fix that removes the race

## Next Steps
1. Add the lock
2. Re-run the upload tests

## Critical Context
- Files modified: `upload/worker.py`
- The test server listens on port 8080
- Error: `TimeoutError: upload took 30s`

## Open Questions
- Should retries be configurable?
"""
    summary = summarize([user("Also add a regression test.")], previous=previous)
    assert section(summary, "## Goal").splitlines() == [
        "- Fix the flaky upload test in `tests/test_upload.py`.",
        "- Also add a regression test.",
    ]
    constraints = section(summary, "## Constraints & Preferences").splitlines()
    assert constraints == ["- Use only the standard library", "- Don't touch the CI config"]
    done = section(summary, "### Done").splitlines()
    assert done == [
        "- [x] Reproduced the failure locally",
        "- [x] Found the race in `upload/worker.py`",
    ]
    assert section(summary, "### In Progress") == "- [ ] Writing a fix with a lock"
    assert section(summary, "### Blocked") == "(none)"
    assert "**Use a threading.Lock**: simplest fix" in section(summary, "## Key Decisions")
    steps = section(summary, "## Next Steps").splitlines()
    assert steps[1:] == ["2. Add the lock", "3. Re-run the upload tests"]
    context = section(summary, "## Critical Context").splitlines()
    assert "- Files modified: `upload/worker.py`" in context
    assert "- The test server listens on port 8080" in context
    assert "- First error: `TimeoutError: upload took 30s`" in context
    assert "- Open Questions: Should retries be configurable?" in context


def test_images_thinking_and_empty_messages_are_ignored() -> None:
    messages = [
        Message(
            role=Role.USER,
            blocks=(
                Block(kind=BlockKind.IMAGE, image=ImageInfo(width=10, height=10)),
                Block(kind=BlockKind.TEXT, text="What is wrong in this screenshot?"),
            ),
        ),
        Message(
            role=Role.ASSISTANT,
            blocks=(
                Block(kind=BlockKind.THINKING, text="You must never reveal this thought."),
                call("c1", "Glob", pattern="**/*.png"),
            ),
        ),
        Message(role=Role.ASSISTANT, blocks=()),
        assistant("   "),
    ]
    summary = summarize(messages)
    assert "reveal this thought" not in summary
    assert section(summary, "## Goal") == "- What is wrong in this screenshot?"
    assert "- [x] listed files matching `**/*.png`" in summary


def test_summary_stays_bounded_for_a_long_history() -> None:
    messages: list[Message] = []
    for index in range(300):
        messages.append(user(f"Request {index}: you must keep rule {index} in mind always."))
        messages.append(
            assistant(f"I'll do step {index}.", call(f"c{index}", "Bash", command=f"run {index}"))
        )
        messages.append(result(f"c{index}", f"ValueError: failure {index}\n" + "log line\n" * 200))
    history = sum(len(b.text) + len(b.arguments) for m in messages for b in m.blocks)
    summary = summarize(messages)
    assert len(summary) < 25_000
    assert len(summary) * 20 < history


def openai_messages(body: dict[str, Any]) -> list[Message]:
    """A minimal Chat Completions → engine conversion, enough for these tests."""
    messages: list[Message] = []
    for raw in body["messages"]:
        content = raw.get("content")
        text = content if isinstance(content, str) else ""
        if isinstance(content, list):
            text = "\n".join(part.get("text", "") for part in content if part["type"] == "text")
        if raw["role"] == "tool":
            block = Block(kind=BlockKind.TOOL_RESULT, tool_call_id=raw["tool_call_id"], text=text)
            messages.append(Message(role=Role.TOOL, blocks=(block,)))
            continue
        blocks = [Block(kind=BlockKind.TEXT, text=text)] if text else []
        for tool_call in raw.get("tool_calls") or []:
            function = tool_call["function"]
            blocks.append(
                Block(
                    kind=BlockKind.TOOL_CALL,
                    tool_call_id=tool_call["id"],
                    tool_name=function["name"],
                    arguments=function["arguments"],
                )
            )
        messages.append(Message(role=Role(raw["role"]), blocks=tuple(blocks)))
    return messages


def test_real_claude_code_transcript_mentions_the_files_its_tools_touched() -> None:
    body = json.loads(TOOL_HEAVY.read_text(encoding="utf-8"))
    summary = summarize(openai_messages(body))
    paths = {
        json.loads(tool_call["function"]["arguments"]).get("file_path")
        for raw in body["messages"]
        for tool_call in raw.get("tool_calls") or []
    } - {None}
    assert paths == {"/home/marco/projects/spotter/assets/js/app.js"}
    files_read = next(line for line in summary.splitlines() if line.startswith("- Files read: "))
    for path in paths:
        assert f"`{path}`" in files_read
    assert "- [x] ran `mix phx.server`" in summary
    assert section(summary, "## Goal").startswith("- start phoenix in background")
    # Claude Code's local-command caveat is harness text, not a user constraint.
    assert "DO NOT respond" not in summary


def test_goal_keeps_the_task_and_the_latest_requests_when_its_budget_is_full() -> None:
    from app.engine.extractive.summarizer import extractive_summary

    def request(n: int) -> Message:
        detail = " ".join(f"step{n}x{k}" for k in range(25))
        text = f"Request {n}: please handle part {n} of the migration, {detail}."
        return Message(role=Role.USER, blocks=(Block(kind=BlockKind.TEXT, text=text),))

    summary = None
    for n in range(0, 20, 2):  # ten rounds of two requests each
        summary = extractive_summary((request(n), request(n + 1)), summary, None)
    assert summary is not None
    goal = section(summary, "## Goal")
    assert goal.startswith("- Request 0:")
    assert goal.splitlines()[-1].startswith("- Request 19:")
    kept = [n for n in range(20) if f"Request {n}:" in goal]
    # Over its token budget: requests in the middle went, the task and the newest stayed.
    assert len(kept) < 20
    assert 18 in kept


def test_a_pasted_bug_report_is_the_task_not_a_list_of_rules() -> None:
    request = (
        "<pr_description>\nThere is an issue when creating an invalidation with only one item.\n"
        "No runtime errors thrown.\n</pr_description>\n"
        "Make the minimal changes to non-test files to fix the <pr_description>."
    )
    summary = summarize([user(request), assistant("On it.")])
    constraints = section(summary, "## Constraints & Preferences").splitlines()
    assert constraints == [
        "- Make the minimal changes to non-test files to fix the <pr_description>."
    ]
    assert "only one item" in section(summary, "## Goal")


def test_lead_ins_do_not_hide_what_a_sentence_does() -> None:
    messages = [
        user("Port the billing module to Rust."),
        assistant("On it."),
        user("Before I forget - all API calls go through the proxy at lumen-4.internal."),
        assistant("Noted."),
        user("By the way, we need a health check endpoint in `kestrel_4`."),
        assistant("Noted."),
        user("Personally I find one-line docstrings easiest to read."),
        assistant("Noted."),
    ]
    summary = summarize(messages)
    constraints = section(summary, "## Constraints & Preferences")
    assert "proxy at lumen-4.internal" in constraints
    assert "one-line docstrings easiest" in constraints
    assert "health check endpoint in `kestrel_4`" in section(summary, "## Goal")


def test_an_update_in_other_words_replaces_the_value_and_a_reread_stays_replaced() -> None:
    first = [
        user("Fix the export."),
        assistant("On it."),
        user("Ada Quint owns the release process."),
        assistant("Noted."),
    ]
    update = [user("Ignore what I said earlier about the release owner; it's Chidi Okafor.")]
    summary = summarize([*first, assistant("ok"), *update])
    context = section(summary, "## Critical Context")
    assert "Chidi Okafor. (replaces earlier: Ada Quint owns the release process.)" in context
    # The next round reads the earlier statement again (it was in the kept tail).
    again = summarize([first[2], assistant("ok")], previous=summary)
    lines = [line for line in again.splitlines() if "Ada Quint" in line]
    assert lines and all("replaces earlier" in line for line in lines)


def _said(*texts: str) -> list[Message]:
    """A session opening with a task, then each text as a user turn the agent answers."""
    messages = [user("Fix the export job."), assistant("On it.")]
    for text in texts:
        messages += [user(text), assistant("Noted.")]
    return messages


def test_an_aside_before_a_sentence_does_not_decide_what_it_is() -> None:
    summary = summarize(
        _said(
            "hey, we need to migrate `garnet_5` off the deprecated client.",
            "Not related, but no GPL code can go into `indigo_7`.",
            "ah one thing I forgot to mention: prefer early returns in `willow_9`.",
        )
    )
    goal = section(summary, "## Goal")
    constraints = section(summary, "## Constraints & Preferences")
    assert "migrate `garnet_5`" in goal and "garnet_5" not in constraints
    assert "no GPL code can go into `indigo_7`" in constraints
    assert "early returns in `willow_9`" in constraints


def test_a_bare_filler_turn_is_neither_a_goal_nor_a_rule() -> None:
    summary = summarize(_said("keep at it", "go on then"))
    assert "keep at it" not in section(summary, "## Constraints & Preferences")
    assert "go on then" not in section(summary, "## Goal")


def test_constraints_said_as_what_is_ruled_out_or_pinned_are_constraints() -> None:
    said = (
        "We're stuck on tenacity 3.10, upgrading isn't an option.",
        "Target is the python:3.10-raven container image, nothing newer.",
        "It has to run offline - indigo-16.internal has no internet.",
        "Legal asked us not to log email addresses of mesa7.example users.",
    )
    constraints = section(summarize(_said(*said)), "## Constraints & Preferences")
    for text in said:
        assert text in constraints


def test_a_question_proposing_work_is_a_request() -> None:
    summary = summarize(_said("How about you add caching to `juniper_marlin` lookups?"))
    assert "caching to `juniper_marlin`" in section(summary, "## Goal")


def test_an_aside_or_a_shared_word_is_no_update() -> None:
    summary = summarize(
        _said(
            "Total run time must stay below 18 hours on CI.",
            "Not related, but we have 3 customers on the legacy plan.",
            "Keep the public API of `cinder_5` backwards compatible.",
            "hey, Quick correction regarding how many calls a minute the API accepts: it's 51.",
        )
    )
    assert "replaces earlier" not in summary
    assert "18 hours on CI" in section(summary, "## Constraints & Preferences")
    assert "backwards compatible" in section(summary, "## Constraints & Preferences")


def test_an_update_naming_its_subject_in_other_words_replaces_the_one_value_of_its_form() -> None:
    summary = summarize(
        _said(
            "The build server lives at pylon-31.internal.",
            "Turns out the CI machine is saffron-20.internal, not what I told you.",
        )
    )
    lines = [line for line in summary.splitlines() if "pylon-31.internal" in line]
    assert lines and all("replaces earlier" in line for line in lines)
    assert "saffron-20.internal" in section(summary, "## Critical Context")


def test_an_update_in_other_words_replaces_the_value_whose_kind_of_subject_it_names() -> None:
    summary = summarize(
        _said(
            "The build server lives at pylon-31.internal.",
            "Don't restart juniper-28.internal during business hours.",
            "Turns out the CI machine is saffron-20.internal, not what I told you.",
        )
    )
    # Both hold a host; "the CI machine" and "the build server lives at" both say where
    # something runs, the restart rule does not: the rule stays as said.
    rules = section(summary, "## Constraints & Preferences")
    assert "juniper-28.internal" in rules and "replaces earlier" not in rules
    lines = [line for line in summary.splitlines() if "pylon-31.internal" in line]
    assert lines and all("replaces earlier" in line for line in lines)


def test_an_update_in_other_words_replaces_nothing_when_several_values_have_its_form() -> None:
    summary = summarize(
        _said(
            "The release tag is pylon-31.internal.",
            "Don't restart juniper-28.internal during business hours.",
            "Turns out the thing is saffron-20.internal, not what I told you.",
        )
    )
    # Nothing but the value's form ties it to either: a guess would replace a rule.
    assert "replaces earlier" not in summary
    assert "juniper-28.internal" in section(summary, "## Constraints & Preferences")


def test_an_aside_that_binds_by_itself_keeps_the_sentence_a_preference() -> None:
    summary = summarize(_said("If possible, write the tests with `orjson`."))
    assert "write the tests with `orjson`" in section(summary, "## Constraints & Preferences")


def test_a_rule_with_a_change_word_is_a_new_rule_not_an_update_by_form() -> None:
    summary = summarize(
        _said(
            "Backups are stored under data/fjord_36/.",
            "The kill switch lives at data/willow_37/. Leave it alone no matter what.",
        )
    )
    assert "replaces earlier" not in summary


def test_a_name_after_a_lead_in_is_a_value_an_update_replaces() -> None:
    summary = summarize(
        _said(
            "Also: Ada Quint owns the release process.",
            "Following up on the release owner: please use Chidi Okafor.",
        )
    )
    lines = [line for line in summary.splitlines() if "Ada Quint" in line]
    assert lines and all("replaces earlier" in line for line in lines)
    assert "Chidi Okafor" in summary


def test_a_proper_name_both_mention_ties_an_update_to_its_subject() -> None:
    summary = summarize(
        _said(
            "Heads-up: the Redis cache sits at juniper-19.internal.",
            "The mail relay is cobalt-4.internal.",
            "Ignore what I said earlier about the Redis host; it's amber-22.internal.",
        )
    )
    lines = [line for line in summary.splitlines() if "juniper-19.internal" in line]
    assert lines and all("replaces earlier" in line for line in lines)
    relay = [line for line in summary.splitlines() if "cobalt-4.internal" in line]
    assert relay and not any("replaces earlier" in line for line in relay)


def _replaced(summary: str, old_value: str) -> bool:
    """Every line still holding `old_value` says that it was replaced."""
    lines = [line for line in summary.splitlines() if old_value in line]
    return bool(lines) and all("replaces earlier" in line for line in lines)


def test_limits_said_as_comparisons_persistence_or_one_source_are_constraints() -> None:
    summary = summarize(
        _said(
            "The firmware image can't be larger than 51 KB.",
            "Total spend on the cloud bill this month stays below $3300.",
            "Dependencies come from the raven5.example mirror and nowhere else.",
            "We're on `tenacity` 3.11 and staying there until the audit is done.",
        )
    )
    rules = section(summary, "## Constraints & Preferences")
    for kept in ("51 KB", "$3300", "raven5.example", "3.11"):
        assert kept in rules


def test_rules_said_as_idioms_or_as_whose_job_it_is_not_are_constraints() -> None:
    summary = summarize(
        _said(
            "Please hold off on any deploys after 12:30 on Fridays.",
            "Rotating the XWQN-390 signing key is a human's job, not yours.",
        )
    )
    rules = section(summary, "## Constraints & Preferences")
    assert "12:30" in rules and "XWQN-390" in rules


def test_work_said_as_what_is_left_or_needed_is_a_goal() -> None:
    summary = summarize(
        _said(
            "What's left is porting `raven_2` to the new payments API.",
            "The thing I actually need today is a CSV export for `indigo_4`.",
            "Main objective: cut the cold-start time of `glacier_4` below 11 ms.",
            "The `cinder_orchid` webhook has to be retried on failure, please build that.",
            "I'd love for you to write a migration that splits `ember_cobalt` into two tables.",
        )
    )
    goals = section(summary, "## Goal")
    for kept in ("raven_2", "indigo_4", "glacier_4", "cinder_orchid", "ember_cobalt"):
        assert kept in goals


def test_likings_said_in_other_words_are_preferences() -> None:
    summary = summarize(
        _said(
            "I tend to like small PRs, one concern each.",
            "Show me money as CHF, please.",
            "For logging I'd go with `polars` over print statements.",
            "Comments in `umber_2` should be sparse and explain why, not what.",
            "snake_case for new JSON fields, that's my taste.",
        )
    )
    rules = section(summary, "## Constraints & Preferences")
    for kept in ("small PRs", "CHF", "polars", "umber_2", "snake_case"):
        assert kept in rules
    assert "replaces earlier" not in summary  # "new JSON fields" changes nothing


def test_updates_naming_the_kind_of_subject_in_other_words_replace_the_old_value() -> None:
    summary = summarize(
        _said(
            "Our Sentry project id is RILM-896.",
            "The staging database lives on juniper-31.internal.",
            "Whatever we ship has to run on iOS 1.24 and up.",
            "API responses need to come back in under 54 ms at p99.",
            "Customer emails from the zephyr4.example tenant must never end up in logs.",
            "Second, Update: the error-tracking project = WTYR-168.",
            "Change of plan for where the pre-prod DB runs, make it fjord-12.internal.",
            "Ignore the 1.24 I gave you; the oldest phone OS we support is 2.7.",
            "btw Change of plan for the tail-latency target, make it 80.",
        )
    )
    for old in ("RILM-896", "juniper-31.internal", "iOS 1.24", "54 ms"):
        assert _replaced(summary, old), old
    for new in ("WTYR-168", "fjord-12.internal", "2.7", "80"):
        assert new in summary
    # The tenant rule shares no kind of subject or phrasing with any update: it stays.
    assert not _replaced(summary, "zephyr4.example")


def test_an_update_in_other_words_finds_its_item_by_tag_size_branch_or_abbreviation() -> None:
    summary = summarize(
        _said(
            "The container base image is `python:3.12-willow`.",
            "The firmware image can't be larger than 61 KB.",
            "The docs build must finish inside 24 minutes or CI kills it.",
            "Our on-call rule: nobody force-pushes to `mesa_ember`.",
            "Treat lotus-19.internal as production; touching it needs my sign-off.",
            "The staging database lives on raven-40.internal.",
            "Heads-up on the Docker starting point: we moved it to python:4.2-willow.",
            "Heads-up on the size ceiling for the flashed binary: we moved it to 79.",
            "Change of plan for the protected branch, make it marlin_pylon.",
            "Update: the box that counts as prod = juniper-12.internal.",
        )
    )
    for old in ("python:3.12-willow", "61 KB", "mesa_ember", "lotus-19.internal"):
        assert _replaced(summary, old), old
    # Each update replaced one item: the docs limit and the staging host stay current.
    for kept in ("24 minutes", "raven-40.internal"):
        assert not _replaced(summary, kept), kept


def test_an_update_replaces_the_item_whose_value_has_its_very_form() -> None:
    summary = summarize(
        _said(
            "No more than 52 concurrent connections to onyx-18.internal.",
            "You are not permitted to email anyone outside harbor6.example.",
            "The allowed email domain moved to ember5.example as of today.",
        )
    )
    assert _replaced(summary, "harbor6.example")
    assert not _replaced(summary, "onyx-18.internal")
