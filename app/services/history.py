"""The history a caller sends, as the services see it (no HTTP types)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.engine.clearing import ClearSettings
from app.engine.compaction.orchestration import CompactionPlan
from app.engine.compaction.strategy import DEFAULT_STRATEGY, StrategyName
from app.engine.counting.estimate import UsageReport
from app.engine.ports import ChunkProgress
from app.engine.thinking import ThinkingLevel
from app.formats.apis.protocol import RequestEnvelope

# The tokenizer choice that means "the model's own encoding".
AUTO_TOKENIZER = "auto"


@dataclass(frozen=True, slots=True)
class HistoryInput:
    """A request's history and the settings that apply to it."""

    messages: Sequence[Any]
    format: str | None = None
    system: Any = None
    tools: Sequence[Any] = ()
    # The request's other tool fields as sent (e.g. legacy `functions`, `tool_choice`):
    # the wire format reads them when it counts the tools.
    tool_fields: Mapping[str, Any] = field(default_factory=dict)
    model: str | None = None
    context_window: int | None = None
    reserve_tokens: int | None = None
    # The request's own output budget (`max_tokens` and the like): the reserve is at
    # least this, whichever reserve applies (the request's, the model policy's, the
    # default).
    output_budget: int = 0
    trigger_tokens: int | None = None
    keep_recent_tokens: int | None = None
    tokenizer: str = AUTO_TOKENIZER
    usage: Sequence[UsageReport] = ()
    estimate_floor: int = 0


def request_history(
    format_name: str, envelope: RequestEnvelope, messages: Sequence[Any]
) -> HistoryInput:
    """`messages` as the history of the vendor request `envelope` was read from: its
    system prompt, tools (and other tool fields) and model are counted with them."""
    return HistoryInput(
        messages=messages,
        format=format_name,
        system=envelope.system,
        tools=envelope.tools or (),
        tool_fields=envelope.tool_fields,
        model=envelope.model,
    )


@dataclass(frozen=True, slots=True)
class CompactOptions:
    force: bool = False
    instructions: str | None = None
    thinking: ThinkingLevel | None = None
    # Why this compaction runs: request (stateless /compact), auto, manual, overflow.
    trigger: str = "request"
    # How to compact (app.services.strategies has what each name does); None: the
    # model's configured strategy (COMPACTOR_CONFIG), else the default.
    strategy: StrategyName | None = DEFAULT_STRATEGY
    clear: ClearSettings = field(default_factory=ClearSettings)
    # Facts the caller wants in every summary, verbatim.
    pinned: tuple[str, ...] = ()
    # Asked with the plan before the summarizer is called: a reason not to call it (the
    # proxy knows this prefix does not shrink) leaves the history uncompacted.
    skip_summary: Callable[[CompactionPlan], str | None] | None = None
    # A session's compaction: a cut that would leave the history over the threshold is
    # made deeper once (CompactionService.summarize), so the next turn does not pay for
    # another summary.
    deepen: bool = False
    # What the compaction's log line names it by: `session_id`, or the proxy's `api` and
    # prefix (app.services.compaction_log).
    subject: Mapping[str, Any] = field(default_factory=dict)
    # A session's compaction while recall over MCP is on: its summary message ends with
    # the recall line naming this session (SPEC §17).
    recall_session: str | None = None
    # Told of each chunk folded (an asynchronous compaction job's progress).
    progress: ChunkProgress | None = None
