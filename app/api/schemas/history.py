"""Request and response bodies of the stateless endpoints (the HTTP contract)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    field_validator,
    model_validator,
)

from app.api.limits import MAX_MESSAGES, MAX_TOKENS
from app.api.schemas.names import DEFAULT_TOKENIZER, Format, TokenizerName
from app.api.schemas.strategy import (
    DEFAULT_STRATEGY,
    PINNED_DESCRIPTION,
    STRATEGY_DESCRIPTION,
    AppliedStep,
    ClearedToolUseOut,
    ClearIn,
    PinnedText,
    RestoredFactOut,
    Strategy,
)
from app.api.schemas.strict import PROVIDER_REQUEST_FIELDS, StrictBody, as_line_errors
from app.api.schemas.usage import UsageIn
from app.engine.thinking import ThinkingLevel

WindowSourceName = Literal["request", "config", "upstream", "registry", "alias", "fallback"]
MODEL_KNOWN_DESCRIPTION = (
    "False when nothing knows the model name (registry, alias, the service's configuration "
    "or the upstream's model list): the window is then the request's or the fallback one."
)
WINDOW_SOURCE_DESCRIPTION = (
    "Where context_window came from: request, config (the operator's per-model policy), "
    "upstream (the upstream's model list), registry, alias (the registry, through an alias "
    "or a gateway name), fallback (COMPACTOR_FALLBACK_CONTEXT_WINDOW)."
)
# Text stored in PostgreSQL columns cannot hold a NUL character.
NO_NUL = r"^[^\x00]*$"


class ContextSettingsIn(StrictBody):
    """What a history is and where its threshold lies: shared by every history and session
    body."""

    model: str | None = Field(default=None, max_length=200, pattern=NO_NUL)
    format: Format | None = Field(default=None, description="Detected when omitted.")
    system: str | list[dict[str, Any]] | dict[str, Any] | None = Field(
        default=None,
        description="Top-level system prompt (Anthropic `system`, Responses `instructions`, "
        "Gemini `systemInstruction`).",
    )
    tools: list[dict[str, Any]] = Field(default_factory=list)
    context_window: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    reserve_tokens: int | None = Field(default=None, ge=0, le=MAX_TOKENS)
    trigger_tokens: int | None = Field(default=None, gt=0, le=MAX_TOKENS)


class CompactionSettingsIn(ContextSettingsIn):
    """How a history is compacted: the settings POST /compact and POST /sessions share."""

    keep_recent_tokens: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    thinking: ThinkingLevel | None = Field(
        default=None, description="Thinking level the summarizer starts at."
    )


class HistoryIn(ContextSettingsIn):
    """A history in any wire format, with the settings that apply to it.

    Unknown fields are refused (422, with the field probably meant), except the provider
    request fields callers forward with a history (max_tokens, temperature, stream,
    tool_choice, ...: see PROVIDER_REQUEST_FIELDS), which are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")
    ignored_fields: ClassVar[frozenset[str]] = PROVIDER_REQUEST_FIELDS

    messages: list[dict[str, Any]] = Field(
        max_length=100_000,
        description="Chat Completions or Messages API messages, Responses input items or "
        "Gemini contents, unchanged.",
    )
    functions: list[dict[str, Any]] = Field(
        default_factory=list, description="Deprecated Chat Completions functions; counted."
    )
    tool_choice: str | dict[str, Any] | None = Field(
        default=None, description="Counted: `none` and a named function cost tokens."
    )
    function_call: str | dict[str, Any] | None = Field(
        default=None, description="Deprecated request-level form of tool_choice."
    )
    tokenizer: TokenizerName = DEFAULT_TOKENIZER
    usage: list[UsageIn] = Field(
        default_factory=list,
        description="Provider usage objects as returned, each with the message_index of its "
        "reply (OpenAI Chat Completions, Responses or Anthropic shape).",
    )
    estimate_floor: int = Field(default=0, ge=0, le=MAX_MESSAGES)

    @model_validator(mode="after")
    def _usage_within_messages(self) -> HistoryIn:
        for report in self.usage:
            if report.message_index >= len(self.messages):
                raise ValueError(
                    f"usage: message_index {report.message_index} is past the end of the "
                    f"{len(self.messages)} messages; it must name the reply it reports on"
                )
        return self


class CompactIn(HistoryIn, CompactionSettingsIn):
    """Body of POST /compact."""

    # `thinking` is ours here (a level); Anthropic's own `thinking` object, forwarded with
    # the request, is the provider's setting and is ignored like the other provider fields.
    ignored_fields: ClassVar[frozenset[str]] = PROVIDER_REQUEST_FIELDS - {"thinking"}

    force: bool = Field(default=False, description="Compact even under the threshold.")
    instructions: str | None = Field(default=None, max_length=20_000)
    strategy: Strategy | None = Field(
        default=None,
        description=STRATEGY_DESCRIPTION
        + " Default: the model's configured strategy (COMPACTOR_CONFIG), else summarize.",
    )
    clear: ClearIn = Field(default_factory=ClearIn)
    pinned: list[PinnedText] = Field(
        default_factory=list, max_length=200, description=PINNED_DESCRIPTION
    )

    @field_validator("thinking", mode="before")
    @classmethod
    def _provider_thinking_is_ignored(cls, value: Any) -> Any:
        return None if isinstance(value, dict) else value


# The fields of POST /compact that POST /estimate accepts without using them.
COMPACT_ONLY_FIELDS = frozenset(CompactIn.model_fields) - frozenset(HistoryIn.model_fields)


class EstimateIn(HistoryIn):
    """Body of POST /estimate.

    The fields of POST /compact are accepted and ignored too: a caller may send one body
    to both (estimate first, compact when it says so). They are checked as /compact
    checks them, so a body one refuses is refused by both."""

    ignored_fields: ClassVar[frozenset[str]] = PROVIDER_REQUEST_FIELDS | COMPACT_ONLY_FIELDS

    @model_validator(mode="wrap")
    @classmethod
    def _compaction_settings_as_compact_checks_them(
        cls, data: Any, handler: ModelWrapValidatorHandler[EstimateIn]
    ) -> EstimateIn:
        given = (
            {k: v for k, v in data.items() if k in COMPACT_ONLY_FIELDS}
            if isinstance(data, dict)
            else {}
        )
        if not given:
            return handler(data)
        problems: list[Any] = []
        try:
            # One validation for both routes: /compact's own, on just these fields.
            CompactIn.model_validate({"messages": [], **given})
        except ValidationError as exc:
            problems = as_line_errors(exc)
        try:
            body = handler(data)
        except ValidationError as exc:
            if not problems:
                raise
            problems.extend(as_line_errors(exc))
        if problems:
            raise ValidationError.from_exception_data(cls.__name__, problems)
        return body


class Breakdown(BaseModel):
    system: int
    tools: int
    messages: int
    estimated: list[str] = Field(
        default_factory=list,
        description=(
            "Parts counted by a guess, not a published or API-confirmed rule: tokenizer "
            "(an approximate encoding for this model), framing (the wire format's framing "
            "is unpublished), images, tool_calls, tool_results, thinking, blocks, tools, "
            "usage_anchor (the total adds counts to a provider usage report). Empty "
            "exactly when `exact` is true."
        ),
    )


class EstimateOut(BaseModel):
    """Token estimate and compaction decision."""

    tokens: int
    method: str = Field(description="tokenizer | heuristic, prefixed usage+ when anchored.")
    exact: bool
    encoding: str
    model: str | None
    model_known: bool = Field(description=MODEL_KNOWN_DESCRIPTION)
    breakdown: Breakdown
    per_message: list[int]
    context_window: int
    context_window_source: WindowSourceName = Field(description=WINDOW_SOURCE_DESCRIPTION)
    reserve_tokens: int
    threshold: int
    should_compact: bool
    usage_anchor_index: int | None = None
    estimate_floor: int = 0


class SummarizerOut(BaseModel):
    provider: str
    model: str
    thinking: ThinkingLevel
    attempts: int
    chunks: int = 1
    input_tokens: int = Field(
        default=0, description="Every prompt token of the summary calls, cached or not."
    )
    output_tokens: int = 0
    cache_read_tokens: int = Field(
        default=0, description="Prompt tokens the summarizer's provider read from its cache."
    )
    cache_write_tokens: int = Field(
        default=0, description="Prompt tokens the summarizer's provider wrote to its cache."
    )


class CompactOut(BaseModel):
    """A compacted history, or the reason nothing was compacted."""

    compacted: bool
    reason: str | None = None
    format: Format
    messages: list[dict[str, Any]]
    system: str | list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]]
    summary: str | None = None
    updated_previous_summary: bool = False
    cut_index: int | None = None
    summarized_messages: int = 0
    tokens_before: int
    tokens_after: int
    threshold: int
    context_window: int
    context_window_source: WindowSourceName = Field(description=WINDOW_SOURCE_DESCRIPTION)
    model_known: bool = Field(description=MODEL_KNOWN_DESCRIPTION)
    estimate_floor: int
    summarizer: SummarizerOut | None = None
    strategy: Strategy = DEFAULT_STRATEGY
    applied: list[AppliedStep] = Field(
        default_factory=list, description="What was done, in order; empty when not compacted."
    )
    restored_facts: list[RestoredFactOut] = Field(
        default_factory=list,
        description="Pinned facts the summarizer left out, added back into the summary.",
    )
    current_request: str | None = Field(
        default=None,
        description="The request of the turn the cut fell inside, quoted in the summary.",
    )
    cleared_tool_uses: list[ClearedToolUseOut] = Field(default_factory=list)
    tokens_cleared: int = 0


class HealthOut(BaseModel):
    status: str


class ReadyOut(BaseModel):
    status: str
    tokenizers: list[str]
    summarizer: str
    database: str
