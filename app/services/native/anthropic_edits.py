"""Anthropic `context_management.edits` applied in front of any upstream (SPEC §11).

The request's history is edited the way the vendor documents (clear tool uses, clear
thinking, compact), with the service's own clearing, compaction and summarizer; what the
upstream receives is a plain Messages request. A compaction is handed back as the vendor's
`compaction` block: its `content` is the summary, its `encrypted_content` the signed
verbatim tail the service kept, so a later request that carries the block is rebuilt as
summary + kept tail + what followed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.engine.clearing import ClearSettings
from app.engine.errors import (
    IneffectiveCompactionError,
    InvalidHistoryError,
    NothingToCompactError,
    SummarizerError,
)
from app.engine.ports import CallerGone
from app.formats.vendor.native_anthropic import (
    ClearThinkingEdit,
    ClearToolUsesEdit,
    CompactEdit,
    Edit,
    after_compaction,
    clear_thinking,
    compaction_block,
    count_tool_uses,
    has_compaction_blocks,
    last_compaction,
    parse_context_management,
    without_compaction_blocks,
)
from app.formats.vendor.native_anthropic_reply import NativeReport
from app.services.clearing import clear_history
from app.services.compaction import CompactionService
from app.services.estimation import CountedHistory, EstimationService
from app.services.history import CompactOptions, HistoryInput
from app.services.native.compaction_state import (
    CompactionState,
    CompactionStates,
    NativeCompaction,
    compact_natively,
    keep_recent_for,
    request_model_and_tools,
)

FORMAT = "anthropic"
logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EditedMessages:
    """A Messages request with its edits applied, and what the reply must report."""

    body: dict[str, Any]
    applied_edits: tuple[dict[str, Any], ...]
    original_input_tokens: int
    input_tokens: int
    # Set when a compact edit ran (its summary is None when the summarizer failed).
    compaction: NativeCompaction | None = None
    pause: bool = False
    has_edits: bool = False

    @property
    def paused(self) -> bool:
        """pause_after_compaction: answer with the compaction block, call no model."""
        return self.pause and self.compaction is not None and self.compaction.summary is not None

    def context_management(self) -> dict[str, Any]:
        """The reply's `context_management` (BetaContextManagementResponse)."""
        return {"applied_edits": [dict(edit) for edit in self.applied_edits]}

    def report(self) -> NativeReport:
        """What the reply must carry about these edits."""
        block = None
        usage = (0, 0)
        if self.compaction is not None:
            block = compaction_block(self.compaction.summary, self.compaction.state)
            usage = (self.compaction.input_tokens, self.compaction.output_tokens)
        return NativeReport(
            block=block,
            compaction_usage=usage,
            context_management=self.context_management() if self.has_edits else None,
        )


@dataclass(frozen=True, slots=True)
class _Request:
    system: Any
    tools: Sequence[Any]
    model: str | None

    def history(self, messages: Sequence[Any]) -> HistoryInput:
        return HistoryInput(
            messages=messages, format=FORMAT, system=self.system, tools=self.tools, model=self.model
        )


class AnthropicEditsService:
    """Applies Anthropic context-management edits and compaction blocks to a request."""

    def __init__(
        self,
        estimation: EstimationService,
        compaction: CompactionService,
        states: CompactionStates,
    ) -> None:
        self.estimation = estimation
        self.compaction = compaction
        self.states = states

    async def apply(
        self,
        body: dict[str, Any],
        tenant: str = "",
        caller_gone: CallerGone = lambda: False,
        *,
        compact: bool = True,
    ) -> EditedMessages:
        """The request to forward; `compact=False` (counting) never calls the summarizer."""
        raw_messages = body.get("messages")
        if not isinstance(raw_messages, list):
            raise InvalidHistoryError("messages: must be an array of messages", where="messages")
        edits = parse_context_management(body.get("context_management"))
        model, tools = request_model_and_tools(body)
        request = _Request(body.get("system"), tools, model)
        messages = self.expand(raw_messages, tenant)
        counted = self.estimation.count(request.history(messages), parse_all=True)
        original = counted.estimate.tokens
        applied: list[dict[str, Any]] = []
        compaction: NativeCompaction | None = None
        pause = False
        for edit in edits:
            if isinstance(edit, CompactEdit):
                if not compact or counted.estimate.tokens <= edit.trigger_tokens:
                    continue
                compaction, messages, counted = await self._compact(
                    request, messages, counted, edit, tenant, caller_gone
                )
                pause = pause or edit.pause_after_compaction
                continue
            result = self._clear(request, messages, counted, edit)
            if result is not None:
                messages, counted, report = result
                applied.append(report)
        forwarded = body
        if messages is not raw_messages or "context_management" in body:
            forwarded = {k: v for k, v in body.items() if k != "context_management"}
            forwarded["messages"] = messages
        return EditedMessages(
            body=forwarded,
            applied_edits=tuple(applied),
            original_input_tokens=original,
            input_tokens=counted.estimate.tokens,
            compaction=compaction,
            pause=pause,
            has_edits=bool(edits),
        )

    def expand(self, messages: list[Any], tenant: str) -> list[Any]:
        """`messages` rebuilt from their last compaction block: everything before it is
        dropped, its content is the summary (and its state, when the service wrote it,
        the verbatim tail); compaction blocks never reach the upstream."""
        if not has_compaction_blocks(messages):
            return messages
        mark = last_compaction(messages)
        if mark is None:
            return without_compaction_blocks(messages)
        state = CompactionState((), mark.content, ())
        token = mark.encrypted_content
        if token and self.states.is_ours(token):
            where = f"messages[{mark.message_index}].content[{mark.block_index}].encrypted_content"
            state = replace(self.states.open(token, tenant, where), summary=mark.content)
        rebuilt = self.states.rebuild(state, FORMAT)
        return without_compaction_blocks([*rebuilt, *after_compaction(messages, mark)])

    def _clear(
        self, request: _Request, messages: list[Any], counted: CountedHistory, edit: Edit
    ) -> tuple[list[Any], CountedHistory, dict[str, Any]] | None:
        before = counted.estimate.tokens
        if isinstance(edit, ClearThinkingEdit):
            cleared, turns = clear_thinking(messages, edit.keep_turns)
            if not turns:
                return None
            after = self.estimation.count(request.history(cleared), parse_all=True)
            report = {
                "type": edit.type,
                "cleared_thinking_turns": turns,
                "cleared_input_tokens": max(0, before - after.estimate.tokens),
            }
            return cleared, after, report
        assert isinstance(edit, ClearToolUsesEdit)
        if edit.trigger.kind == "tool_uses":
            due = count_tool_uses(messages) > edit.trigger.value
        else:
            due = before > edit.trigger.value
        if not due:
            return None
        settings = ClearSettings(
            keep=edit.keep,
            clear_at_least=edit.clear_at_least,
            exclude_tools=edit.exclude_tools,
            clear_tool_inputs=edit.clear_tool_inputs,
        )
        result = clear_history(self.estimation, request.history(messages), counted, settings)
        if result.history is None or result.counted is None:
            return None
        report = {
            "type": edit.type,
            "cleared_tool_uses": len(result.plan.cleared),
            "cleared_input_tokens": max(0, before - result.counted.estimate.tokens),
        }
        return list(result.history.messages), result.counted, report

    async def _compact(
        self,
        request: _Request,
        messages: list[Any],
        counted: CountedHistory,
        edit: CompactEdit,
        tenant: str,
        caller_gone: CallerGone,
    ) -> tuple[NativeCompaction | None, list[Any], CountedHistory]:
        options = CompactOptions(force=True, instructions=edit.instructions, trigger="native")
        try:
            done = await compact_natively(
                self.compaction,
                self.states,
                replace(
                    request.history(messages),
                    keep_recent_tokens=keep_recent_for(edit.trigger_tokens),
                ),
                options,
                tenant,
                caller_gone,
            )
        except (NothingToCompactError, IneffectiveCompactionError) as exc:
            logger.info("native compaction skipped: %s", exc)
            return None, messages, counted
        except SummarizerError as exc:
            # The vendor's contract: a failed compaction is a block with null content, and
            # the request goes on with its context unchanged.
            logger.warning("native compaction failed, context left unchanged: %s", exc)
            return NativeCompaction(None, None), messages, counted
        new_messages = list(done.messages)
        return (
            done.compaction,
            new_messages,
            self.estimation.count(request.history(new_messages), parse_all=True),
        )
