"""Vendor-native context management as values (SPEC §11): what a request asks for and
what its answer must report, whatever the wire shape (the formats parse and render it).

Anthropic's `context_management.edits` (clear tool uses, clear thinking, compact) and
OpenAI Responses' `context_management` compaction entry map onto these; the services
apply them with the engine's own clearing and compaction.
"""

from __future__ import annotations

from dataclasses import dataclass

# The vendor's documented defaults (Anthropic `context_management` edits).
DEFAULT_CLEAR_TRIGGER_TOKENS = 100_000
DEFAULT_CLEAR_KEEP_TOOL_USES = 3
DEFAULT_COMPACT_TRIGGER_TOKENS = 150_000
DEFAULT_KEEP_THINKING_TURNS = 1


@dataclass(frozen=True, slots=True)
class Trigger:
    """When an edit runs: more than `value` input tokens, or more than `value` tool uses."""

    kind: str
    value: int


DEFAULT_CLEAR_TRIGGER = Trigger("input_tokens", DEFAULT_CLEAR_TRIGGER_TOKENS)


@dataclass(frozen=True, slots=True)
class ClearToolUsesEdit:
    """Clear old tool results (and optionally inputs), keeping the newest `keep` uses."""

    type: str
    trigger: Trigger = DEFAULT_CLEAR_TRIGGER
    keep: int = DEFAULT_CLEAR_KEEP_TOOL_USES
    clear_at_least: int = 0
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool | tuple[str, ...] = False


@dataclass(frozen=True, slots=True)
class ClearThinkingEdit:
    """Drop thinking blocks of all but the newest `keep_turns` turns (None keeps all)."""

    type: str
    keep_turns: int | None = DEFAULT_KEEP_THINKING_TURNS


@dataclass(frozen=True, slots=True)
class CompactEdit:
    """Summarize the history once it is over `trigger_tokens` input tokens."""

    type: str
    trigger_tokens: int = DEFAULT_COMPACT_TRIGGER_TOKENS
    instructions: str | None = None
    pause_after_compaction: bool = False


Edit = ClearToolUsesEdit | ClearThinkingEdit | CompactEdit


@dataclass(frozen=True, slots=True)
class AppliedEdit:
    """One edit that changed the request, as the answer reports it."""

    type: str
    cleared_input_tokens: int
    cleared_tool_uses: int | None = None
    cleared_thinking_turns: int | None = None


@dataclass(frozen=True, slots=True)
class CompactionMark:
    """The last compaction block with a summary: where it is and what it carries."""

    message_index: int
    block_index: int
    content: str
    encrypted_content: str | None
    # An on-demand compaction block's signature over its content (None: not signed).
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class CompactionReport:
    """A native compaction as the answer reports it: the summary (None when the
    summarizer failed: the vendor's null-content block), the sealed state, its usage."""

    summary: str | None
    state: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    # On-demand compaction: the signature over the summary the block carries.
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class NativeReport:
    """What an answer must say about the request's edits: the compaction block (if one
    ran), and the applied edits (when the request had edits at all)."""

    compaction: CompactionReport | None = None
    applied_edits: tuple[AppliedEdit, ...] = ()
    has_edits: bool = False

    @property
    def changes_reply(self) -> bool:
        return self.compaction is not None or self.has_edits


@dataclass(frozen=True, slots=True)
class OnDemandCompaction:
    """Anthropic's top-level `compaction: {type: "summarize", instructions}`: summarize the
    whole conversation now and answer with the block alone."""

    instructions: str | None = None


@dataclass(frozen=True, slots=True)
class CompactionEntry:
    """Responses `context_management` compaction: compact when the input is over
    `compact_threshold` tokens (None: the model's threshold from the registry)."""

    compact_threshold: int | None = None
