"""Tool-result clearing: the cheap strategy (the equivalent of Anthropic's `clear_tool_uses`).

Old tool results are replaced by a one-line placeholder naming the tool and what it worked
on; the call and its result stay in place, so every pair is intact and no model is called.
The most recent `keep` tool uses and the tools in `exclude_tools` are never cleared, and
nothing is cleared unless at least `clear_at_least` tokens would be saved.

Cache-aware steps (SPEC §15, `step_tokens`): a client that resends its history pays a
cache write (Anthropic 1.25×) for everything after the first result whose text changed,
instead of a read (0.1×). The vendor's per-turn rule moves the cleared set by one tool
use per turn, so every turn re-writes the rest of the conversation. In steps, the tool
uses are cut into runs from the oldest one on, a run ending once its results hold
`step_tokens` tokens; only whole runs that lie before the newest `keep` uses are cleared.
A run's end depends only on the tool uses before it, so between two steps the cleared set
is the same bytes on every turn, and between `keep` and `keep` + one run's worth of the
newest uses stay verbatim. A step clearing S tokens re-writes the tail T after it at
1.15× more than reading it and saves 0.1·S on every later turn: it pays for itself after
11.5·T/S turns, so the step is sized like the tail (see DEFAULT_CLEAR_STEP_TOKENS).

A step is never smaller than `clear_at_least` (each step must save what the caller asked
for, the vendor's definition of it). In the REST and session strategies, which must bring
the history under the compaction threshold, it is never larger than a quarter of it
(`step_under`, the share keep-recent takes): the uses of an unfinished run stay verbatim,
and with a larger step they alone could keep the history over it. A clearing trigger
below the threshold says when clearing may start, not the step: the payback above does
not depend on it. The emulated native edit has no such bound: its trigger says when to
clear, not what to reach.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.extractive.text import code_span
from app.engine.extractive.tools import call_target
from app.engine.messages import BlockKind, Message
from app.engine.ports import Tokenizer

CLEARED_RESULT_PREFIX = "[tool result cleared"
CLEARED_INPUT_KEY = "_cleared"
DEFAULT_KEEP_TOOL_USES = 3
# The default step of cache-aware clearing. Clearing triggers at tens of thousands of
# tokens and keeps a few recent results verbatim, so the tail a step re-writes is of that
# order too: steps of 20,000 tokens pay back their write within ~10 turns of a long
# session and re-write the tail once per 20,000 tokens of aged tool results instead of
# on every turn (measured: bench/cost.py, README "Cost per task").
DEFAULT_CLEAR_STEP_TOKENS = 20_000
# The largest step of the strategies' clearing is this share of the compaction threshold.
STEP_SHARE_OF_THRESHOLD = 4


@dataclass(frozen=True, slots=True)
class ClearSettings:
    """When and what to clear; `trigger=None` means the compaction threshold."""

    trigger: int | None = None
    keep: int = DEFAULT_KEEP_TOOL_USES
    clear_at_least: int = 0
    exclude_tools: tuple[str, ...] = ()
    # True clears every cleared use's input too; a tuple clears the inputs of those tools.
    clear_tool_inputs: bool | tuple[str, ...] = False
    # Cache-aware steps (module docstring); 0 clears by the vendor's exact per-turn rule.
    step_tokens: int = 0

    def clears_input_of(self, tool_name: str) -> bool:
        """True when a cleared use of `tool_name` loses its input as well."""
        if isinstance(self.clear_tool_inputs, tuple):
            return tool_name in self.clear_tool_inputs
        return self.clear_tool_inputs


@dataclass(frozen=True, slots=True)
class ClearedToolUse:
    """One cleared tool use: what replaces its result (and, maybe, its input)."""

    tool_call_id: str
    tool_name: str
    placeholder: str
    # The arguments (JSON text) that replace the call's input, when inputs are cleared.
    input_placeholder: str | None
    # Estimated tokens this clearing saves.
    tokens_saved: int

    @property
    def input_cleared(self) -> bool:
        """Whether the call's input was replaced as well as its result."""
        return self.input_placeholder is not None


@dataclass(frozen=True, slots=True)
class ClearingPlan:
    cleared: tuple[ClearedToolUse, ...]
    reason: str | None = None
    # The newest tool uses left verbatim (more than `keep` between two steps).
    kept: int = 0

    @property
    def tokens_saved(self) -> int:
        return sum(c.tokens_saved for c in self.cleared)


@dataclass(frozen=True, slots=True)
class _ToolUse:
    call_id: str
    name: str
    arguments: str
    result_text: str


def plan_clearing(
    messages: Sequence[Message], settings: ClearSettings, tokenizer: Tokenizer, start: int = 0
) -> ClearingPlan:
    """Which tool uses of `messages[start:]` to clear; an empty plan says why not."""
    uses = _answered_tool_uses(messages[start:])
    excluded = set(settings.exclude_tools)
    clearable = max(0, len(uses) - settings.keep)
    if settings.step_tokens > 0:
        step = max(settings.step_tokens, settings.clear_at_least)
        stepped = _last_step(uses, clearable, step, excluded, tokenizer)
        if stepped == 0 and clearable > 0:
            return ClearingPlan((), _no_step_yet(uses, clearable, step, settings), kept=len(uses))
        clearable = stepped
    cleared: list[ClearedToolUse] = []
    for use in uses[:clearable]:
        if use.name in excluded:
            continue
        choice = _clearing_of(use, settings.clears_input_of(use.name), tokenizer)
        if choice is not None:
            cleared.append(choice)
    kept = len(uses) - clearable
    plan = ClearingPlan(tuple(cleared), kept=kept)
    if not cleared:
        return ClearingPlan(
            (),
            f"nothing to clear: {len(uses)} tool uses, the newest {kept} are kept and "
            "the others are excluded, already cleared or too short to be worth it",
            kept=len(uses),
        )
    if plan.tokens_saved < settings.clear_at_least:
        return ClearingPlan(
            (),
            f"clearing {len(cleared)} tool uses would save about {plan.tokens_saved} tokens, "
            f"less than clear_at_least={settings.clear_at_least}",
            kept=len(uses),
        )
    return plan


def step_under(step_tokens: int, threshold: int) -> int:
    """The cache-aware step for clearing that must keep a history under `threshold`:
    `step_tokens` (0: the per-request rule), at most a quarter of the threshold."""
    if step_tokens <= 0:
        return 0
    return max(1, min(step_tokens, threshold // STEP_SHARE_OF_THRESHOLD))


def _last_step(
    uses: Sequence[_ToolUse], clearable: int, step: int, excluded: set[str], tokenizer: Tokenizer
) -> int:
    """How many of the oldest `uses` the last whole run within `uses[:clearable]` covers:
    runs end where their results reach `step` tokens (counted from the oldest use, so an
    end never moves as the history grows)."""
    end = run = 0
    for index, use in enumerate(uses[:clearable]):
        if use.name not in excluded:
            run += tokenizer.count(use.result_text)
        if run >= step:
            end, run = index + 1, 0
    return end


def _no_step_yet(
    uses: Sequence[_ToolUse], clearable: int, step: int, settings: ClearSettings
) -> str:
    """Why stepped clearing clears nothing yet: no whole step before the newest uses."""
    why = f"clear_at_least={settings.clear_at_least}" if step == settings.clear_at_least else ""
    return (
        f"nothing to clear yet: clearing moves in steps of {step:,} tokens of tool results "
        f"({why or 'cache-aware steps; COMPACTOR_CLEARING=exact clears on every request'}), "
        f"and the {clearable} tool uses before the newest {len(uses) - clearable} do not "
        "fill one"
    )


def _answered_tool_uses(messages: Sequence[Message]) -> list[_ToolUse]:
    """Tool uses with a result, in the order of their calls."""
    calls: dict[str, tuple[str, str]] = {}
    results: dict[str, list[str]] = {}
    for message in messages:
        for block in message.blocks:
            if block.kind is BlockKind.TOOL_CALL and block.tool_call_id:
                calls.setdefault(block.tool_call_id, (block.tool_name or "tool", block.arguments))
            elif block.kind is BlockKind.TOOL_RESULT and block.tool_call_id:
                results.setdefault(block.tool_call_id, []).append(block.text)
    return [
        _ToolUse(call_id, name, arguments, "\n".join(results[call_id]))
        for call_id, (name, arguments) in calls.items()
        if call_id in results
    ]


def _clearing_of(use: _ToolUse, inputs: bool, tokenizer: Tokenizer) -> ClearedToolUse | None:
    saved = 0
    placeholder = ""
    if not use.result_text.startswith(CLEARED_RESULT_PREFIX):
        result_tokens = tokenizer.count(use.result_text)
        placeholder = result_placeholder(use.name, use.arguments, result_tokens)
        saved = result_tokens - tokenizer.count(placeholder)
    input_placeholder = None
    if inputs and not is_cleared_input(use.arguments):
        input_tokens = tokenizer.count(use.arguments)
        input_placeholder = json.dumps(
            {CLEARED_INPUT_KEY: f"[tool input cleared, {input_tokens:,} tokens]"}
        )
        input_saved = input_tokens - tokenizer.count(input_placeholder)
        if input_saved > 0:
            saved += input_saved
        else:
            input_placeholder = None
    if saved <= 0:
        return None
    if not placeholder:
        # Already cleared: keep the placeholder it has, clear only the input now.
        placeholder = use.result_text
    return ClearedToolUse(use.call_id, use.name, placeholder, input_placeholder, saved)


def result_placeholder(tool_name: str, arguments: str, tokens: int) -> str:
    """The one line that replaces a cleared result: the tool, its target, the size."""
    target = call_target(arguments)
    what = f"{tool_name} {code_span(target)}" if target else tool_name
    return f"{CLEARED_RESULT_PREFIX}: {what}, {tokens:,} tokens]"


def is_cleared_input(arguments: str) -> bool:
    """True for arguments written by a previous clearing."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else None
    except ValueError:
        return False
    return isinstance(parsed, dict) and set(parsed) == {CLEARED_INPUT_KEY}
