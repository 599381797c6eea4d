"""Function tools as OpenAI shows them to the model, and what that costs.

OpenAI does not send JSON schemas to the model: it renders the functions as a
TypeScript-like block, placed in the system message::

    namespace functions {

    // Get the current weather
    type get_current_weather = (_: {
    // The city and state, e.g. San Francisco, CA
    location: string,
    unit?: "celsius" | "fahrenheit",
    }) => any;

    } // namespace functions

The block, plus 9 tokens of framing (4 fewer when the request already has a system
message, whose text then gains a trailing newline), reproduces the `prompt_tokens`
the API reported for the published examples in tests/data/openai_api_reported_examples.json.
How nested objects are laid out changed between model generations, so the layout is
registry data (`ToolsRendering`), not code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.engine.ports import Tokenizer
from app.engine.tools import ToolChoice, ToolChoiceKind, ToolSet

# Framing of the tools system section ("# Tools", "## functions", message overhead).
FUNCTIONS_FRAMING = 9
# A request with a system message shares it with the tools: one message framing less.
SHARED_SYSTEM_SAVING = 4
# tool_choice costs: "none" adds one token, a named function 7 plus its name.
TOOL_CHOICE_NONE = 1
TOOL_CHOICE_NAMED = 7
# Legacy `function_call: {"name": ...}` (request level): hmarr/openai-chat-tokens' rule.
FUNCTION_CALL_NAMED = 4

# Schema keys the rendering is known to drop or to express (anything else is a guess).
_KNOWN_KEYS = frozenset(
    {"type", "description", "enum", "items", "properties", "required", "additionalProperties"}
)
_PRIMITIVES = {"string": "string", "number": "number", "integer": "number"}


@dataclass(frozen=True, slots=True)
class ToolsRendering:
    """How one model generation lays out function schemas (registry data)."""

    name: str = "openai"
    # Descriptions of properties inside nested objects are shown (newer models).
    nested_descriptions: bool = True
    # Spaces before each property line of a nested object, per level.
    nested_indent: int = 0
    # API-reported counts confirm nested objects / properties without a description.
    exact_nested: bool = False
    exact_undescribed: bool = False


DEFAULT_RENDERING = ToolsRendering()


@dataclass(frozen=True, slots=True)
class ToolsCost:
    """Tokens the tool definitions cost, and whether every part followed a confirmed rule."""

    tokens: int
    exact: bool


class _Renderer:
    def __init__(self, style: ToolsRendering) -> None:
        self.style = style
        self.confirmed = True

    def guessed(self) -> None:
        self.confirmed = False

    def function(self, function: Mapping[str, Any]) -> list[str]:
        name = function.get("name")
        if not isinstance(name, str) or not name:
            self.guessed()
            return []
        lines = []
        description = function.get("description")
        if isinstance(description, str) and description:
            lines.append(f"// {description}")
        raw_parameters = function.get("parameters")
        if raw_parameters is not None and not isinstance(raw_parameters, Mapping):
            self.guessed()
        parameters: Mapping[str, Any] = (
            raw_parameters if isinstance(raw_parameters, Mapping) else {}
        )
        properties = parameters.get("properties")
        if isinstance(properties, Mapping) and properties:
            lines.append(f"type {name} = (_: {{")
            lines.append(self.properties(parameters, depth=0))
            lines.append("}) => any;")
        else:
            lines.append(f"type {name} = () => any;")
        lines.append("")
        return lines

    def properties(self, schema: Mapping[str, Any], depth: int) -> str:
        style = self.style
        required = schema.get("required")
        # Caller input, unvalidated: a non-string name in `required` marks nothing.
        required_names = (
            {n for n in required if isinstance(n, str)} if isinstance(required, list) else set()
        )
        if isinstance(required, list) and len(required_names) != len(required):
            self.guessed()
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return ""
        lines = []
        for key, value in properties.items():
            prop = value if isinstance(value, Mapping) else {}
            description = prop.get("description")
            if isinstance(description, str) and description:
                if depth == 0 or style.nested_descriptions:
                    lines.append(f"// {description}")
            elif not style.exact_undescribed:
                self.guessed()
            optional = "" if key in required_names else "?"
            lines.append(f"{key}{optional}: {self.type_of(prop, depth)},")
        indent = " " * (style.nested_indent * depth)
        return "\n".join(indent + line for line in lines)

    def type_of(self, schema: Mapping[str, Any], depth: int) -> str:
        if any(key not in _KNOWN_KEYS for key in schema):
            self.guessed()
        for union_key in ("anyOf", "oneOf"):
            members = schema.get(union_key)
            if isinstance(members, list) and members:
                return " | ".join(
                    self.type_of(m if isinstance(m, Mapping) else {}, depth) for m in members
                )
        kind = schema.get("type")
        enum = schema.get("enum")
        if isinstance(kind, list):
            self.guessed()
            return " | ".join(_PRIMITIVES.get(k, k) if isinstance(k, str) else "any" for k in kind)
        if kind is not None and not isinstance(kind, str):
            # `type: {}` or another non-string: no rule renders it; count it as `any`.
            self.guessed()
            return "any"
        if isinstance(enum, list) and enum and kind in ("string", "number", "integer", None):
            if kind is None:
                self.guessed()
            return " | ".join(json.dumps(v, ensure_ascii=False) for v in enum)
        if kind in _PRIMITIVES:
            return _PRIMITIVES[kind]
        if kind in ("boolean", "null"):
            return str(kind)
        if kind == "array":
            items = schema.get("items")
            if isinstance(items, Mapping):
                return f"{self.type_of(items, depth)}[]"
            return "any[]"
        if kind == "object":
            if not self.style.exact_nested:
                self.guessed()
            if not isinstance(schema.get("properties"), Mapping) or not schema["properties"]:
                self.guessed()
            return "{\n" + self.properties(schema, depth + 1) + "\n}"
        # No type at all renders as `any` (API-confirmed); an unknown type is a guess.
        if kind is not None:
            self.guessed()
        return "any"


def render_functions(
    functions: Sequence[Mapping[str, Any]], style: ToolsRendering = DEFAULT_RENDERING
) -> tuple[str, bool]:
    """(the `namespace functions` block, whether every construct has a confirmed layout)."""
    renderer = _Renderer(style)
    lines = ["namespace functions {", ""]
    for function in functions:
        lines.extend(renderer.function(function))
    lines.append("} // namespace functions")
    return "\n".join(lines), renderer.confirmed


def tool_choice_cost(choice: ToolChoice, tokenizer: Tokenizer) -> tuple[int, bool]:
    """(tokens, confirmed) a tool choice adds."""
    if choice.kind is ToolChoiceKind.AUTO:
        return 0, True
    if choice.kind is ToolChoiceKind.NONE:
        return TOOL_CHOICE_NONE, True
    if choice.kind is ToolChoiceKind.NAMED and choice.name is not None:
        return TOOL_CHOICE_NAMED + tokenizer.count(choice.name), True
    if choice.kind is ToolChoiceKind.NAMED_LEGACY and choice.name is not None:
        return FUNCTION_CALL_NAMED + tokenizer.count(choice.name), False
    return 0, False


def count_function_tools(
    tools: ToolSet,
    tokenizer: Tokenizer,
    style: ToolsRendering = DEFAULT_RENDERING,
    *,
    system_text: str | None = None,
) -> ToolsCost:
    """Tokens `tools` cost as OpenAI renders them.

    `system_text` is the request's first system message text (None when it has none):
    the tools share that message, and it gains a trailing newline.
    """
    functions = [d.function for d in tools.definitions if d.function is not None]
    others = [d.raw for d in tools.definitions if d.function is None]
    tokens = 0
    exact = True
    if functions:
        text, exact = render_functions(functions, style)
        tokens = tokenizer.count(text) + FUNCTIONS_FRAMING
        if system_text is not None:
            tokens -= SHARED_SYSTEM_SAVING
            tokens += tokenizer.count(system_text + "\n") - tokenizer.count(system_text)
        choice_tokens, choice_exact = tool_choice_cost(tools.choice, tokenizer)
        tokens += choice_tokens
        exact = exact and choice_exact
    if others:
        # Built-in or custom tools have no published rendering: their JSON is the guess.
        exact = False
        tokens += sum(
            tokenizer.count(json.dumps(t, ensure_ascii=False, separators=(",", ":")))
            for t in others
        )
    return ToolsCost(tokens=tokens, exact=exact)
