"""The API's closed vocabularies, as Literal types (checked against the OpenAPI enums)."""

from __future__ import annotations

from typing import Literal

Format = Literal["openai", "anthropic", "responses", "gemini"]
ThinkingLevel = Literal["off", "minimal", "low", "medium", "high"]
TokenizerName = Literal["auto", "o200k_base", "cl100k_base", "chars/4"]
CompactReason = Literal["manual", "overflow"]
Strategy = Literal["summarize", "clear_tool_results", "auto"]
AppliedStep = Literal["clear_tool_results", "summarize"]
WindowSource = Literal["request", "config", "upstream", "registry", "alias", "fallback"]
Trigger = Literal["auto", "manual", "overflow", "revert"]
SearchMatch = Literal["all", "any"]
ChangedVia = Literal["api", "inspector"]
JobState = Literal["queued", "running", "done", "failed", "abandoned"]
FactKind = Literal["goal", "constraint", "fact", "pinned", "file_read", "file_modified", "error"]
SourceKind = Literal[
    "base", "system_md", "append_system_md", "rules", "extension", "skills", "subagents"
]

FORMATS: tuple[Format, ...] = ("openai", "anthropic", "responses", "gemini")
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high")
STRATEGIES: tuple[Strategy, ...] = ("summarize", "clear_tool_results", "auto")
APPLIED_STEPS: tuple[AppliedStep, ...] = ("clear_tool_results", "summarize")
WINDOW_SOURCES: tuple[WindowSource, ...] = (
    "request",
    "config",
    "upstream",
    "registry",
    "alias",
    "fallback",
)
TRIGGERS: tuple[Trigger, ...] = ("auto", "manual", "overflow", "revert")
SEARCH_MATCHES: tuple[SearchMatch, ...] = ("all", "any")
CHANGED_VIA: tuple[ChangedVia, ...] = ("api", "inspector")
JOB_STATES: tuple[JobState, ...] = ("queued", "running", "done", "failed", "abandoned")
FACT_KINDS: tuple[FactKind, ...] = (
    "goal",
    "constraint",
    "fact",
    "pinned",
    "file_read",
    "file_modified",
    "error",
)
SOURCE_KINDS: tuple[SourceKind, ...] = (
    "base",
    "system_md",
    "append_system_md",
    "rules",
    "extension",
    "skills",
    "subagents",
)
