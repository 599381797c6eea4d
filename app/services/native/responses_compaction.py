"""OpenAI Responses native compaction in front of any upstream (SPEC §11).

`context_management: [{type: "compaction", compact_threshold}]` compacts the input when it
is over the threshold and hands the caller a `compaction` item whose `encrypted_content` is
the signed state; sent back in `input`, the item replaces everything before it. The
standalone `/v1/responses/compact` and `/v1/responses/input_tokens` are answered here too.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.engine.errors import (
    CompactionStateError,
    IneffectiveCompactionError,
    InvalidContextManagementError,
    NothingToCompactError,
    SummarizerError,
)
from app.engine.native_edits import CompactionReport
from app.engine.ports import CallerGone
from app.formats.apis.protocol import RequestEnvelope
from app.formats.registry import FORMATS
from app.services.estimation import CountedHistory
from app.services.history import HistoryInput
from app.services.native.compaction_state import (
    NativeService,
    keep_recent_for,
    uncompacted_state,
)
from app.services.native.ports import ResponsesContextWire

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EditedResponse:
    """A Responses request ready to forward, and the compaction item its reply starts with."""

    body: dict[str, Any]
    item: dict[str, Any] | None = None
    compaction: CompactionReport | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    # The forwarded input and its count, when one was made.
    items: tuple[Any, ...] = ()
    counted: CountedHistory | None = None


@dataclass(frozen=True, slots=True)
class CompactedWindow:
    """A standalone compaction (`POST /v1/responses/compact`): the window's user messages
    then the compaction item, and the summarizer's usage (wire objects from the format)."""

    id: str
    created_at: int
    output: list[dict[str, Any]]
    usage: dict[str, Any]


def new_item_id(prefix: str = "cmp") -> str:
    return f"{prefix}_{secrets.token_hex(16)}"


class ResponsesCompactionService(NativeService[ResponsesContextWire]):
    """Compaction items, standalone compaction and input-token counts for Responses."""

    @property
    def format(self) -> str:
        return self.api.format

    def refuse_server_state(self, body: dict[str, Any], session_bound: bool) -> None:
        """The service cannot see history the upstream stores: refuse to manage it blind."""
        if session_bound:
            return
        for name in self.wire.server_state_fields(body):
            raise InvalidContextManagementError(
                f"{name}: the service cannot see the history the upstream keeps for "
                f"{name}, so it cannot count or compact it; send the whole conversation in "
                "input (with the compaction item the service returned), or bind the request "
                "to a session with the X-Compactor-Session header",
                where=name,
            )

    def expand(self, body: dict[str, Any], tenant: str) -> list[Any]:
        """The input as items, rebuilt from its last compaction item when it has one
        (the vendor routes: a compaction item this service did not write is refused)."""
        self.refuse_foreign_items(body)
        rebuilt = self.rebuild(body, tenant)
        return rebuilt if rebuilt is not None else self.wire.input_items(body)

    def refuse_foreign_items(self, body: dict[str, Any]) -> None:
        """SPEC §11: where the service stands in for the vendor's context management, a
        compaction item it did not write (OpenAI's own encrypted state, say) is refused:
        nothing here can read it, and an upstream other than OpenAI could not either."""
        for index, item in enumerate(self.wire.input_items(body)):
            if self.wire.is_compaction_item(item) and not self.is_own_item(item):
                raise CompactionStateError(
                    f"input[{index}].encrypted_content: a compaction item this service did "
                    "not write (another vendor's encrypted state) cannot be read here; send "
                    "such requests to their vendor unchanged (COMPACTOR_NATIVE_EDITS=forward) "
                    "or leave the item out"
                )

    def rebuild(self, body: dict[str, Any], tenant: str) -> list[Any] | None:
        """The input rebuilt from its last compaction item of this service (everything
        before it goes); None when it has none."""
        return self.rebuild_items(self.wire.input_items(body), tenant, "input")

    def rebuild_items(self, items: Sequence[Any], tenant: str, field: str) -> list[Any] | None:
        """`items` rebuilt from the last compaction item this service wrote; None when
        there is none. A vendor's own compaction item (OpenAI's encrypted state, which
        only OpenAI can read) is not ours to open: it stays where it is, verbatim, and
        the format keeps it in front of what is compacted."""
        index = self.wire.last_compaction_index(items, self.is_own_item)
        if index is None:
            return None
        token = self.wire.compaction_token(items[index]) or ""
        where = f"{field}[{index}].encrypted_content"
        state = self.states.open(token, tenant, where)
        system = self.wire.leading_system_items(items[:index])
        if system:
            # The caller's system prompt in front of the item is its current one: it
            # stands in for the one the state was sealed with (the same, when resent);
            # the rest of the sealed head (a vendor's compaction item) stays.
            sealed = len(self.wire.leading_system_items(state.head))
            state = replace(state, head=(*system, *state.head[sealed:]))
        return [*self.states.rebuild(state, self.format), *items[index + 1 :]]

    def is_own_item(self, item: dict[str, Any]) -> bool:
        """A compaction item to open: one carrying this service's state (maybe altered:
        opening it checks) or no state at all (refused when opened). One with another
        state is a vendor's, opaque to the service."""
        token = self.wire.compaction_token(item)
        return token is None or self.states.is_ours(token)

    def expand_history(self, history: HistoryInput, tenant: str) -> HistoryInput:
        """A Responses history sent to /estimate or /compact with this service's last
        compaction item rebuilt into what it stands for (its summary becomes the previous
        summary, so a compaction updates it); any other history unchanged."""
        if history.format not in (None, self.format):
            return history
        messages = history.messages
        if self.wire.last_compaction_index(messages, self.is_own_item) is None:
            return history
        if FORMATS.resolve(history.format, messages, history.system).name != self.format:
            return history
        rebuilt = self.rebuild_items(messages, tenant, "messages")
        return history if rebuilt is None else replace(history, messages=rebuilt)

    def history(
        self, envelope: RequestEnvelope, items: list[Any], trigger: int | None
    ) -> HistoryInput:
        return replace(
            self.request_history(envelope, items),
            trigger_tokens=trigger,
            keep_recent_tokens=keep_recent_for(trigger),
        )

    async def apply(
        self,
        body: dict[str, Any],
        tenant: str = "",
        caller_gone: CallerGone = lambda: False,
        *,
        session_bound: bool = False,
    ) -> EditedResponse:
        """The request to forward for `POST /v1/responses`."""
        entry = self.wire.compaction_entry(body)
        if entry is not None:
            self.refuse_server_state(body, session_bound)
            self.refuse_foreign_items(body)
        rebuilt = self.rebuild(body, tenant)
        items = rebuilt if rebuilt is not None else self.wire.input_items(body)
        forwarded = body
        if self.wire.self_managed(body) or rebuilt is not None:
            forwarded = self.wire.forwarded(body, rebuilt)
        if entry is None:
            return EditedResponse(forwarded)
        history = self.history(self.api.checked_envelope(body), items, entry.compact_threshold)
        counted = self.estimation.count(history)
        if not counted.should_compact:
            return EditedResponse(forwarded, tokens_before=counted.estimate.tokens)
        try:
            done = await self.compact_natively(history, tenant, caller_gone, counted)
        except (NothingToCompactError, IneffectiveCompactionError) as exc:
            logger.info("native compaction skipped: %s", exc)
            return EditedResponse(forwarded, tokens_before=counted.estimate.tokens)
        except SummarizerError as exc:
            logger.warning("native compaction failed, input left unchanged: %s", exc)
            return EditedResponse(forwarded, tokens_before=counted.estimate.tokens)
        assert done.compaction.state is not None
        return EditedResponse(
            body=self.wire.forwarded(forwarded, done.messages),
            item=self.wire.compaction_item(new_item_id(), done.compaction.state),
            compaction=done.compaction,
            tokens_before=counted.estimate.tokens,
            tokens_after=done.counted.estimate.tokens,
            items=tuple(done.messages),
            counted=done.counted,
        )

    async def compact(
        self,
        body: dict[str, Any],
        tenant: str = "",
        caller_gone: CallerGone = lambda: False,
        *,
        session_bound: bool = False,
    ) -> CompactedWindow:
        """`POST /v1/responses/compact`: the compacted window (CompactedResponse)."""
        items, history = self._standalone_input(body, tenant, session_bound)
        try:
            done = await self.compact_natively(history, tenant, caller_gone)
            compaction = done.compaction
        except (NothingToCompactError, IneffectiveCompactionError):
            # Too little to fold: the item carries the window as it is.
            compaction = CompactionReport(None, self._sealed_whole(items, history, tenant))
        assert compaction.state is not None
        return CompactedWindow(
            id=new_item_id("resp"),
            created_at=int(time.time()),
            output=[
                *self.wire.user_messages(items),
                self.wire.compaction_item(new_item_id(), compaction.state),
            ],
            usage=self.wire.usage(compaction.input_tokens, compaction.output_tokens),
        )

    def sealed_item(
        self, body: dict[str, Any], tenant: str = "", *, session_bound: bool = False
    ) -> dict[str, Any]:
        """A compaction item that stands for `body`'s input as it is (a bound session's
        context, already compacted by the session)."""
        items, history = self._standalone_input(body, tenant, session_bound)
        return self.wire.compaction_item(new_item_id(), self._sealed_whole(items, history, tenant))

    def input_tokens(
        self, body: dict[str, Any], tenant: str = "", *, session_bound: bool = False
    ) -> int:
        """`POST /v1/responses/input_tokens`, counted locally."""
        _, history = self._standalone_input(body, tenant, session_bound)
        return self.estimation.count(history).estimate.tokens

    def _standalone_input(
        self, body: dict[str, Any], tenant: str, session_bound: bool
    ) -> tuple[list[Any], HistoryInput]:
        """The input of a request answered here alone (compact, count, a sealed item) and
        its history: refused when it leans on server state, rebuilt from its compaction
        item."""
        self.refuse_server_state(body, session_bound)
        items = self.expand(body, tenant)
        return items, self.history(self.api.checked_envelope(body), items, None)

    def _sealed_whole(self, items: list[Any], history: HistoryInput, tenant: str) -> str:
        """The sealed state of `items` (`history`) kept whole: nothing folded."""
        inline = self.estimation.count(history).inline_system_count
        return self.states.seal(uncompacted_state(items, inline), tenant)
