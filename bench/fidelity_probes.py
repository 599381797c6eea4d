"""Probes on the real transcripts: what a summary of each must hold, written down by hand
from the transcripts themselves before any summary was looked at.

Every probe names the message it comes from (its index in the wire `messages`), so a probe
counts only when that message was folded into the summary. Scored on the summary alone,
never on the verbatim tail; a phrase matches case-insensitively, backticks and `**` removed,
whitespace collapsed.

- goal: the task the user asked for, not a demonstration and not a continuation summary.
- first_error: the first tool output (or observation sent as `user`) in which a command or
  tool failed with an error message: an exception line, a compiler or linter finding, a
  failing test, "No module named …", a tool's own error reply. A command that failed
  silently (grep finding nothing) is not an error. Not counted where the first error was
  not folded.
- modified: every file created or changed by an edit/write/create tool, a text-action
  command (`create`, `edit`, `insert` on the open file, `str_replace_editor`) or a shell
  command that writes it (`mv` destination, `sed -i`, `cat >`). Deletions are not counted.
  A file counts as kept when any of its spellings is in the summary.
- last_instruction: the newest folded user message that asks for something (three words or
  more; "continue" alone is not an instruction).
- constraints: every sentence of the user's words (task texts included) that prohibits,
  limits or requires something (never, don't, cannot, must, only, always, make sure,
  prefer), not advice ("we recommend", "you can"). Reported per constraint and as "all of a
  transcript's constraints kept".
- next_step (mechanical, same rule everywhere): the Next Steps section has an item, no item
  is filler (`FILLER`), and at least one item shares half of its content words (two at
  least) with the latest folded user instruction, the last five folded assistant texts or
  the folded errors.
- noise: a Goal or Constraints item whose text is found in tool output, an observation, a
  demonstration or assistant text, but not in the user's own words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Phrases = tuple[str, ...]

FILLER = re.compile(
    r"^(?:\d+\.\s*)?(?:let me\b|let['’]s\b|now let\b|i['’]ll now\b|acknowledged\b|ok\b|okay\b|"
    r"sure\b|great\b|perfect\b|excellent\b|good\b|continue from the most recent messages|"
    r"continue\.?$)|:\s*$",
    re.IGNORECASE,
)
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "from",
        "by",
        "at",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "as",
        "into",
        "then",
        "than",
        "so",
        "not",
        "no",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "will",
        "would",
        "should",
        "could",
        "can",
        "may",
        "might",
        "must",
        "you",
        "your",
        "we",
        "our",
        "i",
        "my",
        "me",
        "let",
        "now",
        "next",
        "step",
        "steps",
        "please",
        "also",
        "continue",
        "latest",
        "user",
        "request",
        "error",
        "resolve",
    ]
)


@dataclass(frozen=True, slots=True)
class Item:
    """One probed thing: the message it is in and the phrases that must all be kept."""

    at: int
    phrases: Phrases


@dataclass(frozen=True, slots=True)
class TranscriptProbes:
    goal: Item
    instructions: tuple[Item, ...]
    constraints: tuple[Item, ...] = ()
    first_error: Item | None = None
    modified: tuple[Item, ...] = ()
    # Messages whose text is the user's own words, with an optional marker after which
    # they start (swe_play's task follows an in-context example in the same message).
    user_words: tuple[tuple[int, str], ...] = ()
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _i(at: int, *phrases: str) -> Item:
    return Item(at, tuple(phrases))


_OPENHANDS_RULES = (
    "don't have to modify the testing logic or any of the tests in any way",
    "make the minimal changes to non-tests files",
)
_SWE_AGENT_TIPS = (
    "cannot use any interactive session commands",
    "make sure to insert appropriate indentation before each line",
    "always start by trying to replicate the bug",
    "don't just use the scroll_down command multiple times",
    "always make sure to look at the currently open file",
    "always check the code after you issue an edit",
)
_SWE_PLAY_RULES = (
    "do not assume the environment is the same as in the example above",
    "cannot use any existing vm or cpu simulation frameworks",
    "must be implemented from scratch",
    "never first read and run the unit tests",
    "do not read the content of the given tests",
    "must not modify any content under /tests",
    "emit one and only one function call per message",
)
_CONTINUE = "please continue working on the task on whatever approach you think is suitable"
_NEVER_ASK = "you should never ask for human help"
_VIEW_RANGE = "the view_range parameter is not allowed when path points to a directory"


def _openhands(title: str, continues: Sequence[int], error: Item, files: Sequence[Item]):
    first_continue = [_i(continues[0], _NEVER_ASK)] if continues else []
    return TranscriptProbes(
        goal=_i(1, title),
        instructions=(_i(1, title), *(_i(c, _CONTINUE) for c in continues)),
        constraints=(*(_i(1, rule) for rule in _OPENHANDS_RULES), *first_continue),
        first_error=error,
        modified=tuple(files),
        user_words=((1, ""), *((c, "") for c in continues)),
    )


def _swe_play(task: str, number: str, error_at: int, files: Sequence[Item]) -> TranscriptProbes:
    return TranscriptProbes(
        goal=_i(1, task),
        instructions=(_i(1, f"finish task {number}"),),
        constraints=tuple(_i(1, rule) for rule in _SWE_PLAY_RULES),
        first_error=_i(error_at, "no module named pytest"),
        modified=tuple(files),
        user_words=((1, "END OF EXAMPLE"),),
    )


_CC = "/home/USER/projects/spotter-worktrees/"


def _cc_files(worktree: str, entries: Sequence[tuple[int, str]]) -> tuple[Item, ...]:
    return tuple(_i(at, f"{_CC}{worktree}/{path}") for at, path in entries)


PROBES: dict[str, TranscriptProbes] = {
    "claude_code/4d5611e5-241a-462a-8d15-5122611a9569": TranscriptProbes(
        goal=_i(0, "work on bead spotter-dov"),
        instructions=(_i(0, "work on bead spotter-dov"),),
        first_error=_i(212, "the following paths are ignored by one of your .gitignore files"),
        modified=_cc_files(
            "spotter-dov",
            (
                (23, "lib/spotter_web/live/transcript_computers.ex"),
                (27, "lib/spotter_web/components/transcript_components.ex"),
                (29, "lib/spotter_web/live/session_live.ex"),
                (61, "lib/spotter_web/live/subagent_live.ex"),
                (71, "test/spotter_web/live/subagent_live_test.exs"),
                (91, "lib/spotter/services/transcript_renderer.ex"),
                (105, "test/spotter/services/transcript_renderer_test.exs"),
                (173, "priv/static/assets/spotter.css"),
                (187, "assets/js/app.js"),
                (249, "lib/spotter/services/waiting_summary.ex"),
                (253, "lib/spotter/services/waiting_summary/slice_builder.ex"),
            ),
        ),
        user_words=((0, ""), (42, "")),
        notes="134 is Claude Code's own continuation summary; 294 a harness notification.",
    ),
    "claude_code/4d5611e5.agent-a2898e3": TranscriptProbes(
        goal=_i(0, "how sessionlive and subagentlive currently render transcripts"),
        instructions=(_i(0, "how sessionlive and subagentlive currently render transcripts"),),
        constraints=(_i(0, "provide the full content of each file", "don't summarize"),),
        first_error=_i(4, "file does not exist"),
        user_words=((0, ""),),
    ),
    "claude_code/fa812bfe-b295-4cca-9c2f-fdf01028cb46": TranscriptProbes(
        goal=_i(0, "work on bead spotter-a0y"),
        instructions=(_i(0, "work on bead spotter-a0y"), _i(110, "continue until all are done")),
        first_error=_i(58, "nested modules could be aliased at the top of the invoking module"),
        modified=_cc_files(
            "spotter-a0y",
            (
                (31, "lib/spotter/services/active_session_registry.ex"),
                (33, "spotter-plugin/scripts/notify-session-end.sh"),
                (37, "lib/spotter_web/router.ex"),
                (37, "lib/spotter/application.ex"),
                (37, "spotter-plugin/hooks/hooks.json"),
                (39, "lib/spotter_web/controllers/session_hook_controller.ex"),
                (41, "lib/spotter_web/controllers/hooks_controller.ex"),
                (45, "test/spotter/services/active_session_registry_test.exs"),
                (47, "test/spotter_web/controllers/session_hook_controller_test.exs"),
                (
                    133,
                    "priv/repo/migrations/20260212165422_add_unique_index_messages_session_uuid.exs",
                ),
                (135, "lib/spotter/transcripts/message.ex"),
                (145, "lib/spotter/transcripts/session.ex"),
                (147, "lib/spotter/transcripts/jobs/sync_transcripts.ex"),
                (161, "lib/spotter_web/live/session_live.ex"),
                (173, "test/spotter/transcripts/jobs/sync_transcripts_test.exs"),
                (201, "lib/spotter/services/transcript_tail_adapter.ex"),
                (201, "lib/spotter/services/transcript_tail_adapter/tail_f.ex"),
                (203, "scripts/tail_wrapper.sh"),
                (207, "lib/spotter/services/transcript_tail_worker.ex"),
                (209, "lib/spotter/services/transcript_tail_supervisor.ex"),
                (223, "priv/scripts/tail_wrapper.sh"),
                (225, "test/spotter/services/transcript_tail_worker_test.exs"),
                (259, "priv/static/assets/spotter.css"),
                (261, "lib/spotter_web/live/pane_list_live.ex"),
                (303, "test/spotter_web/live/session_live_test.exs"),
            ),
        ),
        user_words=((0, ""), (110, "")),
        notes="286 is Claude Code's own continuation summary; 108 a harness notification.",
    ),
    "claude_code/tool_heavy": TranscriptProbes(
        goal=_i(0, "start phoenix in background"),
        instructions=(
            _i(0, "start phoenix in background"),
            _i(4, "scrolling back in xterm.js still does not work"),
        ),
        user_words=((0, ""), (4, "")),
    ),
    "openhands/Project-MONAI__MONAI-3715_4": _openhands(
        "mode of evaluator can't work with string input",
        (43,),
        _i(3, _VIEW_RANGE),
        (
            _i(10, "/workspace/Project-MONAI__MONAI__0.8/reproduce_error.py"),
            _i(36, "/workspace/Project-MONAI__MONAI__0.8/monai/engines/evaluator.py"),
        ),
    ),
    "openhands/Project-MONAI__MONAI-5686_4": _openhands(
        "ssimloss result does not have gradient",
        (19, 21),
        _i(3, _VIEW_RANGE),
        (
            _i(6, "/workspace/Project-MONAI__MONAI__1.1/reproduce_ssimloss_issue.py"),
            _i(14, "/workspace/Project-MONAI__MONAI__1.1/monai/losses/ssim_loss.py"),
        ),
    ),
    "openhands/Project-MONAI__MONAI-6849_1": _openhands(
        "convert_to_contiguous converts tuple to list",
        (22, 24),
        _i(3, _VIEW_RANGE),
        (
            _i(13, "/workspace/Project-MONAI__MONAI__1.2/reproduce_error.py"),
            _i(17, "/workspace/Project-MONAI__MONAI__1.2/monai/transforms/utils.py"),
        ),
    ),
    "openhands/getmoto__moto-6387_0": _openhands(
        "bogus response from create_invalidation api when supplying a single path",
        (35,),
        _i(15, "the specified distribution does not exist"),
        (
            _i(12, "/workspace/getmoto__moto__4.1/reproduce_error.py"),
            _i(30, "/workspace/getmoto__moto__4.1/moto/cloudfront/responses.py"),
        ),
    ),
    "openhands/python__mypy-15976_0": _openhands(
        "attrs & dataclasses false positive error with slots=true",
        (37, 39),
        _i(3, _VIEW_RANGE),
        (
            _i(10, "/workspace/python__mypy__1.6/reproduce_error.py"),
            _i(30, "/workspace/python__mypy__1.6/mypy/plugins/attrs.py"),
            _i(32, "/workspace/python__mypy__1.6/mypy/plugins/dataclasses.py"),
        ),
    ),
    "swe_agent/ctf_i_got_id_demo": TranscriptProbes(
        goal=_i(1, 'web security problem named "i got id"'),
        instructions=(_i(1, 'web security problem named "i got id"'),),
        constraints=tuple(
            _i(1, rule)
            for rule in (
                "you can only enter one command at a time",
                "you should always wait for feedback after every command",
                "cannot use any interactive session commands",
                "make sure to insert appropriate indentation before each line",
                "try to minimize the changes you make to the file",
                "minimize the time by limiting its run time",
                "use a script to do the brute force",
                "do not run commands in python or sage through the -c flag",
                "prefer using tools available in the container",
            )
        ),
        modified=(_i(16, "printenv.pl"),),
        user_words=((1, ""),),
        notes="No command fails with an error message: no first-error probe.",
    ),
    "swe_agent/marshmallow-1867.function_calling_replace_from_source": TranscriptProbes(
        goal=_i(1, "timedelta serialization precision"),
        instructions=(_i(1, "timedelta serialization precision"),),
        constraints=(
            _i(1, "you should always include exactly one tool call/function call per response"),
            *(_i(1, rule) for rule in _SWE_AGENT_TIPS),
        ),
        modified=(_i(8, "reproduce.py"), _i(20, "src/marshmallow/fields.py")),
        user_words=((1, ""),),
        notes="Function calling; `insert`/`edit` act on the open file. No error.",
    ),
    "swe_agent/pydicom-1458.gpt4": TranscriptProbes(
        goal=_i(2, "pixel representation attribute should be optional for pixel data handler"),
        instructions=(
            _i(2, "pixel representation attribute should be optional for pixel data handler"),
        ),
        constraints=(
            _i(2, "you can only enter one command at a time"),
            _i(2, "you should always wait for feedback after every command"),
            *(_i(2, rule) for rule in _SWE_AGENT_TIPS),
        ),
        first_error=_i(8, "required elements are missing from the dataset: pixelrepresentation"),
        modified=(
            _i(3, "reproduce_bug.py"),
            _i(19, "pydicom/pixel_data_handlers/numpy_handler.py"),
        ),
        user_words=((2, ""),),
        notes="1 is a demonstration (another task); text actions; edits 13-17 were refused.",
    ),
    "swe_play/swe-play-0": _swe_play(
        "create a cpu class that combines registers, memory, and program counter",
        "1.2.1",
        25,
        (
            _i(10, "/workspace/src/cpu_simulator/cpu.py"),
            _i(20, "/workspace/test_cpu_implementation.py"),
        ),
    ),
    "swe_play/swe-play-1": _swe_play(
        "create an instruction decoder that takes machine code",
        "4.1.1",
        23,
        (
            _i(32, "/workspace/test_decoder_demo.py"),
            _i(36, "/workspace/test_decoder_validation.py"),
        ),
    ),
    "swe_play/swe-play-2": _swe_play(
        "create the main execution engine that implements the fetch-decode-execute cycle",
        "4.2.1",
        33,
        (
            _i(28, "/workspace/test_execution_engine.py"),
            _i(40, "/workspace/test_comprehensive_execution.py"),
            _i(54, "/workspace/demo_execution_engine.py"),
        ),
    ),
    "swe_play/swe-play-3": _swe_play(
        "create a symbol table to manage labels and their corresponding memory addresses",
        "3.1.2",
        21,
        (
            _i(14, "/workspace/src/cpu_simulator/assembler.py"),
            _i(16, "/workspace/test_symbol_table.py"),
        ),
    ),
    "swe_play/swe-play-4": _swe_play(
        "create a program counter class that tracks the current instruction address",
        "1.1.3",
        23,
        (_i(16, "/workspace/src/cpu_simulator/cpu.py"), _i(18, "/workspace/test_pc.py")),
    ),
}


# --- scoring -----------------------------------------------------------------------------


def normalized(text: str) -> str:
    """Casefolded, without backticks or bold marks, whitespace collapsed."""
    return " ".join(text.replace("`", "").replace("**", "").split()).casefold()


def holds(summary: str, item: Item) -> bool:
    text = normalized(summary)
    return all(normalized(p) in text for p in item.phrases)


def sections(summary: str) -> dict[str, list[str]]:
    """Items per `##` section (subsections fold into their section), bullets with their
    continuation lines; a paragraph line is an item of its own."""
    found: dict[str, list[str]] = {}
    current = "preamble"
    for line in summary.splitlines():
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        if heading:
            if line.startswith("## ") or line.startswith("# "):
                current = heading.group(1).strip().casefold()
            found.setdefault(current, [])
            continue
        if not line.strip():
            continue
        items = found.setdefault(current, [])
        if re.match(r"^\s{0,3}(?:[-*+]|\d+[.)])\s+", line) or not items:
            items.append(line.strip())
        else:
            items[-1] += " " + line.strip()
    return found


def section_items(summary: str, word: str) -> list[str]:
    return [i for name, items in sections(summary).items() if word in name for i in items]


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_./-]{4,}", normalized(text)) if w not in _STOP}


def genuine_next_step(summary: str, grounds: Sequence[str]) -> bool:
    """The next-step rule of the module docstring."""
    items = [re.sub(r"^\d+[.)]\s*", "", i).strip() for i in section_items(summary, "next step")]
    items = [i for i in items if i and i.casefold() not in ("(none)", "none")]
    if not items or any(FILLER.search(i) for i in items):
        return False
    ground = set().union(*(_content_words(g) for g in grounds)) if grounds else set()
    for item in items:
        words = _content_words(item)
        shared = words & ground
        if len(shared) >= 2 and len(shared) * 2 >= len(words):
            return True
    return False


_MARKER_PREFIX = re.compile(r"^(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(?:pinned:\s*)?", re.I)


def holds_in(summary: str, item: Item, section: str) -> bool:
    """`holds`, on the items of one section only (the Goal for a goal probe)."""
    return holds("\n".join(section_items(summary, section)), item)


_GUARDED = ("goal", "constraint", "decision", "next step")


def filler_items(summary: str) -> list[str]:
    """Key Decisions and Next Steps items that are filler ("Let me…", "Acknowledged")."""
    found = []
    for word in ("decision", "next step"):
        for item in section_items(summary, word):
            body = re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", item).strip()
            if body.casefold() not in ("(none)", "none") and FILLER.search(body):
                found.append(item)
    return found


def noise_items(
    summary: str,
    user_texts: Sequence[str],
    assistant_texts: Sequence[str],
    tool_texts: Sequence[str],
) -> list[str]:
    """Summary items copied from text that is not theirs to hold: Goal and Constraints items
    found in assistant text or tool output (observations and demonstrations included) but
    not in the user's words; Key Decisions and Next Steps items found in tool output but
    in neither the user's nor the assistant's words."""
    users = normalized("\n".join(user_texts))
    assistant = normalized("\n".join(assistant_texts))
    tools = normalized("\n".join(tool_texts))
    found = []
    for word in _GUARDED:
        for item in section_items(summary, word):
            body = normalized(_MARKER_PREFIX.sub("", item))
            probe = body[:80]
            if len(probe) < 20 or probe in users:
                continue
            if probe in tools or (word in ("goal", "constraint") and probe in assistant):
                found.append(item)
    return found
