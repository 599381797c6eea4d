"""Hypothesis strategies: random agent histories in the OpenAI and Anthropic wire formats.

A history is drawn as abstract turns (plain text messages and tool rounds) and then
rendered to one wire format, with the quirks real transcripts have: parallel calls,
results out of order or split over several messages, a text message interleaved before a
late result, a final call that never got its result, `content: null` beside tool calls,
unknown extra fields, results whose call was trimmed away, and a previous summary message
at the start.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from app.engine.compaction.marker import SUMMARY_MARKER, SUMMARY_MARKER_PREFIX

JsonObject = dict[str, Any]

# --- text -------------------------------------------------------------------------------

_CJK = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
_SENTENCES = st.sampled_from(
    [
        "Please fix the failing test in src/app/main.py",
        "Keep the public interface unchanged.",
        "请不要修改公共接口，并把错误信息原样保留。",
        "Error: ModuleNotFoundError: No module named 'foo'",
        "I'll read the file first, then run the tests.",
        "Done. All 42 tests pass.",
        "Let me check /etc/hosts and ~/.config/app.toml",
    ]
)
_EMPTYISH = st.sampled_from(["", " ", "\n", "\t \n"])
_SHORT = st.text(max_size=40)
_CHINESE = st.text(_CJK, min_size=1, max_size=40)
# Long strings are a short drawn piece repeated: cheap to generate, still thousands of tokens.
_LONG = st.builds(
    lambda piece, times: piece * times,
    st.one_of(st.text(min_size=1, max_size=12), _CHINESE, _SENTENCES),
    st.integers(20, 300),
)
texts = st.one_of(_SENTENCES, _SHORT, _CHINESE, _EMPTYISH, _LONG).filter(
    lambda text: not text.startswith(SUMMARY_MARKER_PREFIX)
)

# --- unknown extra fields ---------------------------------------------------------------

_JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    # Beyond 64 bits: JSON allows them and unknown fields must survive exactly.
    st.integers(-(2**80), -(2**63) - 1) | st.integers(2**64, 2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    _SHORT,
)
json_values = st.recursive(
    _JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=6,
)
_EXTRA_KEYS = st.sampled_from(["x_meta", "x_trace", "vendor_extension"])
extras = st.one_of(
    st.just({}), st.just({}), st.dictionaries(_EXTRA_KEYS, json_values, min_size=1, max_size=2)
)

# --- abstract turns ---------------------------------------------------------------------

_TOOL_NAMES = st.sampled_from(["read_file", "bash", "grep", "edit_file", "写文件"])
_TOOL_ARGS = st.fixed_dictionaries(
    {"path": st.sampled_from(["/src/app.py", "tests/test_x.py", "文档/说明.md"])},
    optional={"command": texts, "n": st.integers(0, 10)},
)


@dataclass(frozen=True)
class Say:
    """A plain text message."""

    role: str  # "user" | "assistant"
    text: str
    as_parts: bool  # content as a list of text parts instead of a string
    extra: JsonObject


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    args: JsonObject
    result: str
    result_as_parts: bool
    is_error: bool


@dataclass(frozen=True)
class Round:
    """An assistant message with parallel tool calls, then (some of) their results."""

    text: str | None  # text beside the calls; None → `content: null` in OpenAI
    # Model reasoning: a `thinking` block (Anthropic) or `reasoning_content` (OpenAI-style).
    thinking: str | None
    calls: tuple[Call, ...]
    # Indices into `calls` in delivery order; shorter than `calls` when results are missing.
    order: tuple[int, ...]
    # A text message inserted before the last `late` delivered results.
    interleave: Say | None
    late: int
    # Anthropic: where a new user message starts, one flag per delivered result after the
    # first (True → this result opens a new message).
    breaks: tuple[bool, ...]
    # Anthropic: a text block after the results in the last result message.
    trailing_text: str | None
    extra: JsonObject


@dataclass(frozen=True)
class Orphan:
    """Tool results whose call is not in the history (a client trimmed it mid-round)."""

    ids: tuple[str, ...]
    results: tuple[str, ...]


Turn = Say | Round | Orphan


@st.composite
def says(draw: st.DrawFn, role: str | None = None) -> Say:
    return Say(
        role=role or draw(st.sampled_from(["user", "assistant"])),
        text=draw(texts),
        as_parts=draw(st.booleans()),
        extra=draw(extras),
    )


@st.composite
def turn_lists(
    draw: st.DrawFn, id_prefix: str = "call", min_turns: int = 0, max_turns: int = 14
) -> list[Turn]:
    """Random turns; tool call ids are unique (`{id_prefix}_{n}`)."""
    count = draw(st.integers(min_turns, max_turns))
    turns: list[Turn] = []
    next_id = 0
    for position in range(count):
        kind = draw(st.sampled_from(["user", "assistant", "round", "round"] * 3 + ["orphan"]))
        if kind == "orphan":
            size = draw(st.integers(1, 2))
            ids = tuple(f"{id_prefix}_orphan_{next_id + i}" for i in range(size))
            results = draw(st.lists(texts, min_size=size, max_size=size))
            turns.append(Orphan(ids, tuple(results)))
            next_id += size
            continue
        if kind != "round":
            turns.append(draw(says(kind)))
            continue
        calls = []
        for _ in range(draw(st.integers(1, 4))):
            calls.append(
                Call(
                    id=f"{id_prefix}_{next_id}",
                    name=draw(_TOOL_NAMES),
                    args=draw(_TOOL_ARGS),
                    result=draw(texts),
                    result_as_parts=draw(st.booleans()),
                    is_error=draw(st.integers(0, 4)) == 0,
                )
            )
            next_id += 1
        order = tuple(draw(st.permutations(range(len(calls)))))
        if position == count - 1 and draw(st.booleans()):
            # The real quirk: the newest call(s) never got a result.
            order = order[: draw(st.integers(0, len(order) - 1))]
        interleave = None
        late = 0
        if order and draw(st.integers(0, 3)) == 0:
            interleave = draw(says())
            late = draw(st.integers(1, len(order)))
        turns.append(
            Round(
                text=draw(st.one_of(st.none(), st.just(""), texts)),
                thinking=draw(st.one_of(st.none(), st.none(), texts)),
                calls=tuple(calls),
                order=order,
                interleave=interleave,
                late=late,
                breaks=tuple(
                    draw(st.lists(st.booleans(), min_size=len(order), max_size=len(order)))
                ),
                trailing_text=draw(st.one_of(st.none(), st.none(), texts)),
                extra=draw(extras),
            )
        )
    return turns


# --- rendering --------------------------------------------------------------------------


def _openai_content(text: str, as_parts: bool) -> Any:
    return [{"type": "text", "text": text}] if as_parts else text


def render_openai(turns: list[Turn]) -> list[JsonObject]:
    """Chat Completions messages: `tool_calls` answered by `role: tool` messages."""
    messages: list[JsonObject] = []
    for turn in turns:
        if isinstance(turn, Say):
            content = _openai_content(turn.text, turn.as_parts)
            messages.append({"role": turn.role, "content": content, **turn.extra})
            continue
        if isinstance(turn, Orphan):
            messages += [
                {"role": "tool", "tool_call_id": call_id, "content": result}
                for call_id, result in zip(turn.ids, turn.results, strict=True)
            ]
            continue
        reasoning = {} if turn.thinking is None else {"reasoning_content": turn.thinking}
        messages.append(
            {
                "role": "assistant",
                "content": turn.text,
                **reasoning,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": json.dumps(call.args, ensure_ascii=False),
                        },
                    }
                    for call in turn.calls
                ],
                **turn.extra,
            }
        )
        for position, index in enumerate(turn.order):
            if turn.interleave is not None and position == len(turn.order) - turn.late:
                say = turn.interleave
                messages.append({"role": say.role, "content": say.text, **say.extra})
            call = turn.calls[index]
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": _openai_content(call.result, call.result_as_parts),
                }
            )
    return messages


def _anthropic_result(call: Call) -> JsonObject:
    block: JsonObject = {
        "type": "tool_result",
        "tool_use_id": call.id,
        "content": [{"type": "text", "text": call.result}] if call.result_as_parts else call.result,
    }
    if call.is_error:
        block["is_error"] = True
    return block


def render_anthropic(turns: list[Turn]) -> list[JsonObject]:
    """Messages API: `tool_use` blocks answered by `tool_result` blocks in user messages."""
    messages: list[JsonObject] = []
    for turn in turns:
        if isinstance(turn, Say):
            content: Any = [{"type": "text", "text": turn.text}] if turn.as_parts else turn.text
            messages.append({"role": turn.role, "content": content, **turn.extra})
            continue
        if isinstance(turn, Orphan):
            orphaned = [
                {"type": "tool_result", "tool_use_id": call_id, "content": result}
                for call_id, result in zip(turn.ids, turn.results, strict=True)
            ]
            messages.append({"role": "user", "content": orphaned})
            continue
        blocks: list[JsonObject] = []
        if turn.thinking is not None:
            blocks.append({"type": "thinking", "thinking": turn.thinking, "signature": "c2ln"})
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        blocks += [
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.args}
            for call in turn.calls
        ]
        messages.append({"role": "assistant", "content": blocks, **turn.extra})
        groups: list[list[JsonObject]] = []
        for position, index in enumerate(turn.order):
            if turn.interleave is not None and position == len(turn.order) - turn.late:
                say = turn.interleave
                groups.append([{"role": say.role, "content": say.text, **say.extra}])
                groups.append([])
            elif not groups or turn.breaks[position]:
                groups.append([])
            groups[-1].append(_anthropic_result(turn.calls[index]))
        if groups and turn.trailing_text is not None:
            groups[-1].append({"type": "text", "text": turn.trailing_text})
        for group in groups:
            if len(group) == 1 and "role" in group[0]:
                messages.append(group[0])  # the interleaved text message
            else:
                messages.append({"role": "user", "content": group})
    return messages


# Small targets cut near the end, where the quirks (late and missing results) sit.
keep_recent_tokens = st.one_of(st.integers(1, 60), st.integers(1, 3000))

RENDERERS = {"openai": render_openai, "anthropic": render_anthropic}

# --- whole histories --------------------------------------------------------------------


def summary_body(goal: str) -> str:
    return (
        f"## Goal\n- {goal}\n\n## Constraints & Preferences\n- Keep the public interface "
        "unchanged.\n\n## Progress\n### Done\n- [x] Read `src/app.py`\n\n## Next Steps\n"
        "1. Run the tests"
    )


@dataclass(frozen=True)
class History:
    """A generated request: wire messages plus what the test needs to know about them."""

    format: str
    messages: list[JsonObject]
    system: Any
    system_count: int  # leading system/developer messages (OpenAI)
    previous_summary: str | None  # body of the summary message at the start, if any
    previous_goal: str | None
    keep_recent_tokens: int
    tokenizer: str
    give_format: bool  # pass `format` explicitly, else let the service detect it


@st.composite
def histories(draw: st.DrawFn, fmt: str, max_turns: int = 14) -> History:
    messages: list[JsonObject] = []
    system: Any = None
    system_count = 0
    if fmt == "openai":
        for _ in range(draw(st.integers(0, 2))):
            role = draw(st.sampled_from(["system", "developer"]))
            messages.append({"role": role, "content": draw(texts), **draw(extras)})
        system_count = len(messages)
    else:
        system = draw(
            st.one_of(
                st.none(),
                texts.filter(bool),
                st.lists(st.builds(lambda t: {"type": "text", "text": t}, texts), max_size=2),
            )
        )
    previous = goal = None
    if draw(st.integers(0, 3)) == 0:
        goal = f"prevgoal-{draw(st.integers(0, 10**6))}"
        previous = summary_body(goal)
        text = f"{SUMMARY_MARKER}\n\n{previous}"
        as_parts = fmt == "anthropic" and draw(st.booleans())
        messages.append(
            {"role": "user", "content": [{"type": "text", "text": text}] if as_parts else text}
        )
    messages += RENDERERS[fmt](draw(turn_lists(max_turns=max_turns)))
    return History(
        format=fmt,
        messages=messages,
        system=system,
        system_count=system_count,
        previous_summary=previous,
        previous_goal=goal,
        keep_recent_tokens=draw(keep_recent_tokens),
        tokenizer=draw(st.sampled_from(["auto", "auto", "cl100k_base", "chars/4"])),
        give_format=draw(st.booleans()),
    )
