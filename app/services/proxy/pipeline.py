"""One proxied request, stage by stage (SPEC §10, §11): parse → native edits → session
binding → transparent compaction → forward → record.

Each stage reads the `Exchange` and may set what is forwarded and what happens after:
who recompacts after an overflow answer, who rewrites the answer, who records the reply.
The proxy service runs the stages in order, then forwards; no stage knows the others.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.formats.apis.protocol import UpstreamReply
from app.services.estimation import CountedHistory
from app.services.proxy.call import ProxyCall, ProxyMode
from app.services.proxy.report import ProxyAnswer, ProxyReport


class AnswerRewriter(Protocol):
    """Writes a native step's report into the upstream's answer."""

    def rewrite_whole(self, content: bytes) -> bytes: ...

    def rewrite_stream(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]: ...


# The body to retry with after the upstream said the context is too long; None gives up.
OverflowRecovery = Callable[[], Awaitable[dict[str, Any] | None]]
# Records the upstream's finished reply (a bound session's transcript).
ReplyRecorder = Callable[[UpstreamReply], Awaitable[None]]


@dataclass
class Exchange:
    """One request on its way through the stages."""

    call: ProxyCall
    report: ProxyReport
    mode: ProxyMode
    # What to forward; None forwards the received bytes unchanged.
    body: dict[str, Any] | None = None
    # A stage's count of `body`'s history (later stages reuse it), and the messages it
    # counted: reused only for the very same message objects.
    counted: CountedHistory | None = None
    counted_messages: Sequence[Any] = ()
    # An answer that needs no upstream (pause_after_compaction): the stages stop here.
    immediate: ProxyAnswer | None = None
    rewriter: AnswerRewriter | None = None
    recover_overflow: OverflowRecovery | None = None
    record_reply: ReplyRecorder | None = None
    notes: list[str] = field(default_factory=list)

    def count_of(self, messages: Sequence[Any]) -> CountedHistory | None:
        """The count a stage made of exactly `messages` (the same objects), if any."""
        counted, known = self.counted, self.counted_messages
        if counted is None or len(known) != len(messages):
            return None
        return counted if all(a is b for a, b in zip(known, messages, strict=True)) else None

    @property
    def working_body(self) -> dict[str, Any] | None:
        """The body as the stages so far left it (the received one until one edits it)."""
        return self.body if self.body is not None else self.call.body


class ProxyStage(Protocol):
    """One step of the pipeline."""

    async def run(self, exchange: Exchange) -> None:
        """Reads and edits `exchange` (never the call's received body)."""
        ...
