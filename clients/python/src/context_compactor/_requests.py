"""Request bodies as TypedDicts: the optional fields of each call, checked by mypy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Required, TypedDict

from context_compactor._types import Format, Strategy, ThinkingLevel, TokenizerName

SystemPromptValue = str | Sequence[Mapping[str, Any]] | Mapping[str, Any]
"""A system prompt: text, Anthropic text blocks, or a Gemini `systemInstruction` content."""


class UsageReport(TypedDict, total=False):
    """A provider usage report for the reply at `message_index`: the provider's `usage`
    object as returned (OpenAI Chat Completions, Responses or Anthropic) plus the index."""

    message_index: Required[int]
    input_tokens: int | None
    output_tokens: int | None
    cache_read_input_tokens: int | None
    cache_creation_input_tokens: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    prompt_tokens_details: Mapping[str, Any] | None
    completion_tokens_details: Mapping[str, Any] | None
    input_tokens_details: Mapping[str, Any] | None
    output_tokens_details: Mapping[str, Any] | None
    cache_creation: Mapping[str, Any] | None
    service_tier: str | None
    server_tool_use: Mapping[str, Any] | None
    inference_geo: str | None
    iterations: Sequence[Mapping[str, Any]] | None


class ClearOptions(TypedDict, total=False):
    """How `clear_tool_results` clears old tool results (like Anthropic's clear_tool_uses)."""

    keep: int
    """The newest tool uses to leave untouched."""
    clear_at_least: int
    """Clear only when at least this many tokens would be freed."""
    trigger: int | None
    """Clear only above this many tokens (default: the compaction threshold)."""
    exclude_tools: Sequence[str]
    """Tool names whose results are never cleared."""
    clear_tool_inputs: bool
    """Also replace the cleared calls' arguments."""


class EstimateOptions(TypedDict, total=False):
    """Optional fields of POST /estimate (see the API contract for each)."""

    format: Format
    system: SystemPromptValue
    tools: Sequence[Mapping[str, Any]]
    model: str
    context_window: int
    reserve_tokens: int
    trigger_tokens: int
    tokenizer: TokenizerName
    usage: Sequence[UsageReport]
    estimate_floor: int
    functions: Sequence[Mapping[str, Any]]
    """Deprecated Chat Completions functions; counted like tools."""
    function_call: str | Mapping[str, Any]
    """Deprecated request-level form of tool_choice; counted."""
    tool_choice: str | Mapping[str, Any]
    """Counted: `none` and a named function cost tokens."""


HistoryOptions = EstimateOptions
"""The former name of EstimateOptions."""


class CompactOptions(EstimateOptions, total=False):
    """Optional fields of POST /compact."""

    keep_recent_tokens: int
    force: bool
    instructions: str
    thinking: ThinkingLevel
    strategy: Strategy
    clear: ClearOptions
    pinned: Sequence[str]
    """Facts every summary must keep verbatim."""


class SessionOptions(TypedDict, total=False):
    """Optional fields of POST /sessions."""

    model: str
    format: Format
    system: SystemPromptValue
    tools: Sequence[Mapping[str, Any]]
    context_window: int
    reserve_tokens: int
    trigger_tokens: int
    keep_recent_tokens: int
    thinking: ThinkingLevel
    metadata: Mapping[str, Any]
    strategy: Strategy
    clear: ClearOptions
    pinned: Sequence[str]
    prepare_ahead_ratio: float | Literal["off"]
    """Of the threshold, past which the next compaction is prepared in the background."""


class PromptFile(TypedDict):
    """A candidate file the agent found (rules files, prompt files)."""

    path: str
    content: str


class Skill(TypedDict, total=False):
    """A skill the system prompt lists (its content is inlined when no read tool exists)."""

    name: Required[str]
    description: Required[str]
    path: Required[str]
    content: str | None


class Subagent(TypedDict):
    """A sub-agent the system prompt lists."""

    name: str
    description: str


class SystemPromptOptions(TypedDict, total=False):
    """Optional fields of POST /context/system."""

    base_prompt: str
    files: Sequence[PromptFile]
    global_dir: str
    project_dir: str
    trusted: bool
    extension_contexts: Sequence[str]
    skills: Sequence[Skill]
    read_tool_available: bool
    subagents: Sequence[Subagent]
    model: str
    tokenizer: TokenizerName


class SessionChanges(TypedDict, total=False):
    """PATCH /sessions/{id}: the settings to change (None sets one back to the default)."""

    model: str | None
    context_window: int | None
    reserve_tokens: int | None
    trigger_tokens: int | None
    keep_recent_tokens: int | None
    strategy: Strategy | None
    thinking: ThinkingLevel | None
    prepare_ahead_ratio: float | Literal["off"] | None
