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
from dataclasses import dataclass, replace
from typing import Any

from app.engine.clearing import DEFAULT_CLEAR_STEP_TOKENS, ClearSettings
from app.engine.errors import (
    CompactionRequestError,
    IneffectiveCompactionError,
    NothingToCompactError,
    SummarizerError,
)
from app.engine.native_edits import (
    AppliedEdit,
    ClearThinkingEdit,
    ClearToolUsesEdit,
    CompactEdit,
    CompactionReport,
    Edit,
    NativeReport,
    OnDemandCompaction,
)
from app.engine.ports import CallerGone
from app.formats.apis.protocol import RequestEnvelope
from app.services.clearing import clear_history
from app.services.estimation import CountedHistory
from app.services.native.compaction_state import (
    CompactionState,
    NativeService,
    keep_recent_for,
)
from app.services.native.ports import MessagesContextWire

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EditedMessages:
    """A Messages request with its edits applied, and what the reply must report."""

    body: dict[str, Any]
    applied_edits: tuple[AppliedEdit, ...]
    original_input_tokens: int
    input_tokens: int
    # Set when a compact edit ran (its summary is None when the summarizer failed).
    compaction: CompactionReport | None = None
    pause: bool = False
    has_edits: bool = False
    # The forwarded history and its count (the proxy does not count it again).
    messages: tuple[Any, ...] = ()
    counted: CountedHistory | None = None

    @property
    def paused(self) -> bool:
        """pause_after_compaction: answer with the compaction block, call no model."""
        return self.pause and self.compaction is not None and self.compaction.summary is not None

    def report(self) -> NativeReport:
        """What the reply must carry about these edits."""
        return NativeReport(
            compaction=self.compaction, applied_edits=self.applied_edits, has_edits=self.has_edits
        )


@dataclass(frozen=True)
class AnthropicEditsService(NativeService[MessagesContextWire]):
    """Applies Anthropic context-management edits and compaction blocks to a request."""

    # `clear_tool_uses_20250919` in cache-aware steps of this many tokens (SPEC §15,
    # `app.engine.clearing`); 0 is the vendor's exact per-turn rule
    # (COMPACTOR_NATIVE_CLEARING=exact).
    clear_step_tokens: int = DEFAULT_CLEAR_STEP_TOKENS

    async def apply(
        self,
        body: dict[str, Any],
        tenant: str = "",
        caller_gone: CallerGone = lambda: False,
        *,
        compact: bool = True,
    ) -> EditedMessages:
        """The request to forward; `compact=False` (counting) never calls the summarizer."""
        envelope = self.api.checked_envelope(body)
        raw_messages = envelope.history or []
        # count_tokens ignores `compaction`, as the vendor's does.
        on_demand = self.wire.on_demand(body) if compact else None
        if on_demand is not None:
            return await self._on_demand(envelope, body, on_demand, tenant, caller_gone)
        edits = self.wire.edits(body)
        messages, summary_at = self.expanded(raw_messages, tenant)
        counted = self.estimation.count(self.request_history(envelope, messages), parse_all=True)
        original = counted.estimate.tokens
        applied: list[AppliedEdit] = []
        compaction: CompactionReport | None = None
        pause = False
        for edit in edits:
            if isinstance(edit, CompactEdit):
                if not compact or counted.estimate.tokens <= edit.trigger_tokens:
                    continue
                compaction, compacted, counted = await self._compact(
                    envelope, messages, counted, edit, tenant, caller_gone
                )
                if compacted is not messages:
                    # [inline system…] + [summary] + kept tail.
                    summary_at, messages = counted.inline_system_count, compacted
                pause = pause or edit.pause_after_compaction
                continue
            result = self._clear(envelope, messages, counted, edit)
            if result is not None:
                messages, counted, report = result
                applied.append(report)
        forwarded = body
        if messages is not raw_messages or self.wire.self_managed(body):
            forwarded = self.wire.forwarded(body, messages)
        if messages is not raw_messages:
            forwarded = self.api.with_cache_breakpoints(body, forwarded, summary_at)
        return EditedMessages(
            body=forwarded,
            applied_edits=tuple(applied),
            original_input_tokens=original,
            input_tokens=counted.estimate.tokens,
            compaction=compaction,
            pause=pause,
            has_edits=bool(edits),
            messages=tuple(messages),
            counted=counted,
        )

    def expand(self, messages: list[Any], tenant: str) -> list[Any]:
        """`messages` rebuilt from their last compaction block: everything before it is
        dropped, its content is the summary (and its state, when the service wrote it,
        the verbatim tail); compaction blocks never reach the upstream."""
        return self.expanded(messages, tenant)[0]

    def expanded(self, messages: list[Any], tenant: str) -> tuple[list[Any], int | None]:
        """`expand`, and where the summary message is in the result (None: none)."""
        wire = self.wire
        if not wire.has_compaction_blocks(messages):
            return messages, None
        wire.check_signed_blocks(messages)
        mark = wire.last_compaction(messages)
        if mark is None:
            return wire.without_compaction_blocks(messages), None
        at = f"messages[{mark.message_index}].content[{mark.block_index}]"
        if mark.signature is not None:
            self.states.check_signature(mark.signature, mark.content, tenant, f"{at}.signature")
        state = CompactionState((), mark.content, ())
        token = mark.encrypted_content
        if token and self.states.is_ours(token):
            state = replace(
                self.states.open(token, tenant, f"{at}.encrypted_content"), summary=mark.content
            )
        rebuilt = self.states.rebuild(state, self.api.format)
        # The summary follows the state's inline head; the rebuilt part holds no
        # compaction block, so removing the later ones does not move it.
        summary_at = len(state.head) if state.summary is not None else None
        expanded = wire.without_compaction_blocks(
            [*rebuilt, *wire.after_compaction(messages, mark)]
        )
        return expanded, summary_at

    async def _on_demand(
        self,
        envelope: RequestEnvelope,
        body: dict[str, Any],
        request: OnDemandCompaction,
        tenant: str,
        caller_gone: CallerGone,
    ) -> EditedMessages:
        """`compaction: {type: "summarize"}`: the whole conversation summarized into one
        signed block, answered alone (no model is called); the caller keeps what it sends
        after the block next time."""
        messages = self.expand(envelope.history or [], tenant)
        if self.wire.ends_with_unanswered_tool_use(messages):
            raise CompactionRequestError(
                "messages: the last assistant turn calls a tool whose tool_result is not in "
                "the conversation; send the result (or leave the call out) before compacting",
                code="compaction_incomplete_turn",
            )
        history = self.request_history(envelope, messages)
        counted = self.estimation.count(history, parse_all=True)
        try:
            summary = await self.compaction.summarize_all(
                history, request.instructions, caller_gone
            )
        except NothingToCompactError:
            raise CompactionRequestError(
                "messages: there is no user or assistant content to summarize",
                code="compaction_nothing_to_summarize",
            ) from None
        if self.ledger is not None:
            await self.ledger.summary_call(tenant, self.compaction.summarizer.info, summary.usage)
        state = CompactionState((), summary.summary, ())
        compaction = CompactionReport(
            summary=summary.summary,
            state=self.states.seal(state, tenant),
            input_tokens=summary.usage.input_tokens,
            output_tokens=summary.usage.output_tokens,
            signature=self.states.sign_summary(summary.summary, tenant),
        )
        return EditedMessages(
            body=body,
            applied_edits=(),
            original_input_tokens=counted.estimate.tokens,
            input_tokens=counted.estimate.tokens,
            compaction=compaction,
            pause=True,
            messages=tuple(messages),
            counted=counted,
        )

    def _clear(
        self,
        envelope: RequestEnvelope,
        messages: list[Any],
        counted: CountedHistory,
        edit: Edit,
    ) -> tuple[list[Any], CountedHistory, AppliedEdit] | None:
        before = counted.estimate.tokens
        if isinstance(edit, ClearThinkingEdit):
            cleared, turns = self.wire.clear_thinking(messages, edit.keep_turns)
            if not turns:
                return None
            after = self.estimation.count(self.request_history(envelope, cleared), parse_all=True)
            report = AppliedEdit(
                type=edit.type,
                cleared_thinking_turns=turns,
                cleared_input_tokens=max(0, before - after.estimate.tokens),
            )
            return cleared, after, report
        assert isinstance(edit, ClearToolUsesEdit)
        if edit.trigger.kind == "tool_uses":
            due = self.wire.count_tool_uses(messages) > edit.trigger.value
        else:
            due = before > edit.trigger.value
        if not due:
            return None
        settings = ClearSettings(
            keep=edit.keep,
            clear_at_least=edit.clear_at_least,
            exclude_tools=edit.exclude_tools,
            clear_tool_inputs=edit.clear_tool_inputs,
            step_tokens=self.clear_step_tokens,
        )
        result = clear_history(
            self.estimation, self.request_history(envelope, messages), counted, settings
        )
        if result.history is None or result.counted is None:
            return None
        report = AppliedEdit(
            type=edit.type,
            cleared_tool_uses=len(result.plan.cleared),
            cleared_input_tokens=max(0, before - result.counted.estimate.tokens),
            kept_tool_uses=result.plan.kept,
        )
        return list(result.history.messages), result.counted, report

    async def _compact(
        self,
        envelope: RequestEnvelope,
        messages: list[Any],
        counted: CountedHistory,
        edit: CompactEdit,
        tenant: str,
        caller_gone: CallerGone,
    ) -> tuple[CompactionReport | None, list[Any], CountedHistory]:
        history = replace(
            self.request_history(envelope, messages),
            keep_recent_tokens=keep_recent_for(edit.trigger_tokens),
        )
        try:
            done = await self.compact_natively(
                history, tenant, caller_gone, counted, edit.instructions
            )
        except (NothingToCompactError, IneffectiveCompactionError) as exc:
            logger.info("native compaction skipped: %s", exc)
            return None, messages, counted
        except SummarizerError as exc:
            # The vendor's contract: a failed compaction is a block with null content, and
            # the request goes on with its context unchanged.
            logger.warning("native compaction failed, context left unchanged: %s", exc)
            return CompactionReport(None, None), messages, counted
        return done.compaction, list(done.messages), done.counted
