"""The recent stateless proxy decisions the inspector shows (SPEC §18): what the proxy
did with each request not bound to a session, per tenant.

Kept in memory, per process: the newest `per_tenant` decisions of each tenant (at most
`max_tenants` tenants; the one seen longest ago is dropped first). Behind a load balancer
each replica shows what it handled. No message content, unless `with_content` is set:
then the start of the request's last message is kept too.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.request_context import current_request_id
from app.services.proxy.call import ProxyCall
from app.services.proxy.report import ProxyReport

EXCERPT_CHARS = 300


@dataclass(frozen=True, slots=True)
class ProxyDecision:
    """One proxied stateless request and what the proxy decided."""

    at: float  # POSIX seconds
    request_id: str | None
    api: str
    model: str | None
    status: int
    tokens_before: int | None
    tokens_after: int | None
    threshold: int | None
    compacted: bool
    # Why it was not compacted, or failed open (never the caller's data); None when it
    # was compacted or simply under the threshold.
    reason: str | None
    cache_hit: bool
    overflow_retried: bool
    excerpt: str | None = None

    @property
    def under_threshold(self) -> bool:
        return (
            not self.compacted
            and self.tokens_before is not None
            and self.threshold is not None
            and self.tokens_before <= self.threshold
        )


def _text_of(message: Any) -> str | None:
    """The text of a message in any of the proxied formats (content string or parts)."""
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        return " ".join(t for t in texts if isinstance(t, str)) or None
    return None


class RecentDecisions:
    """The newest stateless proxy decisions of each tenant, bounded, in memory."""

    def __init__(self, per_tenant: int = 200, max_tenants: int = 1000, with_content: bool = False):
        self.per_tenant = per_tenant
        self.max_tenants = max_tenants
        self.with_content = with_content
        self._by_tenant: OrderedDict[str, deque[ProxyDecision]] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, call: ProxyCall, report: ProxyReport, status: int) -> None:
        """Keeps what the proxy did with `call` (a stateless request)."""
        decision = ProxyDecision(
            at=time.time(),
            request_id=current_request_id(),
            api=call.api.name,
            model=report.model,
            status=status,
            tokens_before=report.tokens_before,
            tokens_after=report.tokens_after,
            threshold=report.threshold,
            compacted=report.compacted,
            reason=report.note,
            cache_hit=report.cache_hit,
            overflow_retried=report.overflow_retried,
            excerpt=self._excerpt(call) if self.with_content else None,
        )
        with self._lock:
            kept = self._by_tenant.pop(call.tenant, None)
            if kept is None:
                kept = deque(maxlen=self.per_tenant)
                while len(self._by_tenant) >= self.max_tenants:
                    self._by_tenant.popitem(last=False)
            kept.append(decision)
            self._by_tenant[call.tenant] = kept

    def recent(self, tenant: str) -> Sequence[ProxyDecision]:
        """The tenant's decisions, newest first."""
        with self._lock:
            return tuple(reversed(self._by_tenant.get(tenant, ())))

    @staticmethod
    def _excerpt(call: ProxyCall) -> str | None:
        envelope = call.envelope
        if envelope is None or not envelope.history:
            return None
        text = _text_of(envelope.history[-1])
        return text[:EXCERPT_CHARS] if text else None
