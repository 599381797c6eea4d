"""The cost ledger (SPEC §15): what each call billed, per session and per tenant, from the
upstream's own usage reports, priced with the model registry's prices.

Recorded: every proxied request the upstream answered (source `upstream`; a stateless
request under its tenant only, a bound one, `X-Compactor-Session`, under its session too)
and every summary call of a session's recorded compaction (source `summarizer`). Tokens
are kept as reported, in four kinds: uncached input, cache write, cache read, output
(OpenAI's `cached_tokens` are the cache reads of its prompt; its writes are free).

Money is computed when read, with the prices the registry (and the operator's
`[models."pattern".prices]`) give the call's model then; a kind with no price is not
guessed: the total is null and `unpriced_models` says which model lacked one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import anyio

from app.engine.errors import CompactorError
from app.engine.model_policy import ModelPrices
from app.engine.models import ModelInfo
from app.engine.ports import SummarizerInfo, SummaryUsage
from app.services.sessions.transactions import SessionStore
from app.store.errors import StoreError
from app.store.transactions import StoreTransaction
from app.store.views import BilledTokens, CompactionRecord, LedgerEntry, LedgerLine

log = logging.getLogger("compactor.cost")

UPSTREAM = "upstream"
SUMMARIZER = "summarizer"
KINDS = ("input", "cache_write", "cache_read", "output")


class PriceLookup(Protocol):
    """What pricing needs of the model catalog."""

    def resolve(self, model: str | None) -> ModelInfo: ...


class CostObserver(Protocol):
    """Told about every billed call (the `/metrics` counters live behind it)."""

    def billed(
        self, source: str, api: str, tokens: Mapping[str, int], dollars: float | None
    ) -> None:
        """`tokens` by kind (`input`, `cache_write`, `cache_read`, `output`)."""
        ...


def billed_tokens(usage: Mapping[str, int], one_hour_writes: int = 0) -> BilledTokens:
    """A reply's usage report (the session's usage fields) as ledger tokens."""
    written = usage.get("cache_creation_input_tokens", 0)
    return BilledTokens(
        input_tokens=usage.get("input_tokens", 0),
        cache_write_tokens=written,
        cache_read_tokens=usage.get("cache_read_input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        cache_write_1h_tokens=min(one_hour_writes, written),
    )


def summary_tokens(usage: SummaryUsage) -> BilledTokens:
    """A summary call's usage as ledger tokens (its `input_tokens` include the cached)."""
    cached = usage.cache_read_tokens + usage.cache_write_tokens
    return BilledTokens(
        input_tokens=max(0, usage.input_tokens - cached),
        cache_write_tokens=usage.cache_write_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        output_tokens=usage.output_tokens,
        cache_write_1h_tokens=min(usage.cache_write_1h_tokens, usage.cache_write_tokens),
    )


def by_kind(tokens: BilledTokens) -> dict[str, int]:
    """The tokens by kind name."""
    return {
        "input": tokens.input_tokens,
        "cache_write": tokens.cache_write_tokens,
        "cache_read": tokens.cache_read_tokens,
        "output": tokens.output_tokens,
    }


def kind_dollars(tokens: BilledTokens, prices: ModelPrices) -> dict[str, float] | None:
    """Dollars per kind; None when a kind with tokens has no price. Cache writes with
    the 1-hour TTL are priced at `cache_write_1h` (as `cache_write` when it is not set)."""
    one_hour = tokens.cache_write_1h_tokens
    long_price = prices.cache_write_1h if prices.cache_write_1h is not None else prices.cache_write
    counts = {
        "input": [(tokens.input_tokens, prices.input)],
        "cache_write": [
            (tokens.cache_write_tokens - one_hour, prices.cache_write),
            (one_hour, long_price),
        ],
        "cache_read": [(tokens.cache_read_tokens, prices.cache_read)],
        "output": [(tokens.output_tokens, prices.output)],
    }
    dollars: dict[str, float] = {}
    for kind, parts in counts.items():
        dollars[kind] = 0.0
        for count, price in parts:
            if price is None:
                if count:
                    return None
                continue
            dollars[kind] += count * price / 1e6
    return dollars


@dataclass
class CostPart:
    """Tokens and dollars of a set of calls; `dollars` None when one is unpriced."""

    calls: int = 0
    tokens: BilledTokens = field(default_factory=BilledTokens)
    dollars: dict[str, float] | None = field(default_factory=lambda: dict.fromkeys(KINDS, 0.0))

    def add(self, line: LedgerLine, dollars: dict[str, float] | None) -> None:
        self.calls += line.calls
        self.tokens = self.tokens.plus(line.tokens)
        if self.dollars is None or dollars is None:
            self.dollars = None
            return
        for kind in KINDS:
            self.dollars[kind] += dollars[kind]

    @property
    def total(self) -> float | None:
        return sum(self.dollars.values()) if self.dollars is not None else None


@dataclass
class SessionCost:
    """A session's ledger: the upstream's calls, the summarizer's, and what the same turns
    would have cost uncompacted (see `CostLedger.session_cost`)."""

    upstream: CostPart
    summarizer: CostPart
    # Input tokens the session's compactions kept out of later turns (all turns summed).
    folded_tokens: int
    # The upstream calls' dollars with the folded tokens read from the cache on each.
    uncompacted_dollars: float | None
    unpriced_models: list[str]

    @property
    def total(self) -> float | None:
        up, summ = self.upstream.total, self.summarizer.total
        return up + summ if up is not None and summ is not None else None

    @property
    def saved(self) -> float | None:
        total = self.total
        if total is None or self.uncompacted_dollars is None:
            return None
        return self.uncompacted_dollars - total


@dataclass
class TenantCost:
    """A tenant's ledger by (source, API, model)."""

    lines: list[tuple[tuple[str, str, str], CostPart]]
    unpriced_models: list[str]

    @property
    def total(self) -> float | None:
        totals = [part.total for _, part in self.lines]
        return None if any(t is None for t in totals) else sum(t or 0.0 for t in totals)


class CostLedger:
    """Records billed calls and prices them back."""

    def __init__(
        self,
        store: SessionStore,
        models: PriceLookup,
        observer: CostObserver | None = None,
    ) -> None:
        self._store = store
        self._models = models
        self.observer = observer

    def prices(self, model: str) -> ModelPrices:
        """The prices the ledger applies to `model` now."""
        return self._models.resolve(model).prices

    async def upstream_call(
        self,
        tenant: str,
        session_id: str | None,
        api: str,
        model: str | None,
        usage: Mapping[str, int],
        one_hour_writes: int = 0,
    ) -> None:
        """Records a proxied request's reply usage; a store failure is logged, never
        raised: the caller already has its answer."""
        tokens = billed_tokens(usage, one_hour_writes)
        await self.record(LedgerEntry(tenant, session_id, UPSTREAM, api, model or "", tokens))

    async def record(self, entry: LedgerEntry) -> None:
        """Records `entry` in a transaction of its own; a store failure is logged."""
        try:
            await anyio.to_thread.run_sync(self._add, entry)
        except (StoreError, CompactorError) as exc:
            log.warning("cost ledger: could not record a call", extra={"error": str(exc)})
            return
        self._observed(entry)

    def summarizer_entry(
        self, tenant: str, session_id: str | None, provider: str, model: str, usage: SummaryUsage
    ) -> LedgerEntry | None:
        """The ledger entry of a summary call; None when nothing was billed (the
        extractive summarizer calls no model)."""
        tokens = summary_tokens(usage)
        if tokens == BilledTokens():
            return None
        return LedgerEntry(tenant, session_id, SUMMARIZER, provider, model, tokens)

    async def summary_call(self, tenant: str, info: SummarizerInfo, usage: SummaryUsage) -> None:
        """Records a summary call outside a session's compaction (a stateless, native or
        prepared-ahead summary), billed to the tenant; nothing for a call nothing billed."""
        entry = self.summarizer_entry(tenant, None, info.provider, info.model, usage)
        if entry is not None:
            await self.record(entry)

    def add_in(self, tx: StoreTransaction, entry: LedgerEntry) -> None:
        """Adds `entry` in the caller's transaction (a compaction and its summary cost are
        recorded together or not at all)."""
        tx.ledger.add(entry)

    def observed(self, entry: LedgerEntry) -> None:
        """Tells the observer about a recorded entry."""
        self._observed(entry)

    def session_cost(
        self, lines: Sequence[LedgerLine], compactions: Sequence[CompactionRecord]
    ) -> SessionCost:
        """A session's cost from its ledger lines and compactions.

        "Uncompacted" assumes each upstream call would have sent, on top of what it sent,
        every token the compactions recorded before it folded away (`tokens_before -
        tokens_after` of each), and that those tokens, an unchanging prefix of a history
        that only grows, would have been read from the prompt cache on every such call
        (at the model's cache-read price; their one cache write happened before the
        compaction and is in the ledger already). Windows are not checked: an uncompacted
        history might not have fit the model at all.
        """
        upstream, summarizer = CostPart(), CostPart()
        unpriced: set[str] = set()
        folded_total = 0
        extra_dollars: float | None = 0.0
        folds = sorted(
            ((c.created_at, max(0, c.tokens_before - c.tokens_after)) for c in compactions),
            key=lambda pair: pair[0],
        )
        for line in lines:
            prices = self.prices(line.model)
            dollars = kind_dollars(line.tokens, prices)
            if dollars is None:
                unpriced.add(line.model)
            if line.source == SUMMARIZER:
                summarizer.add(line, dollars)
                continue
            upstream.add(line, dollars)
            folded = sum(tokens for at, tokens in folds if at <= line.created_at)
            folded_total += folded
            if extra_dollars is not None:
                if folded and prices.cache_read is None:
                    extra_dollars = None
                    unpriced.add(line.model)
                else:
                    extra_dollars += folded * (prices.cache_read or 0.0) / 1e6
        up = upstream.total
        uncompacted = up + extra_dollars if up is not None and extra_dollars is not None else None
        return SessionCost(upstream, summarizer, folded_total, uncompacted, sorted(unpriced))

    def _add(self, entry: LedgerEntry) -> None:
        with self._store.transaction() as tx:
            tx.ledger.add(entry)

    def cost_of(self, tenant: str, session_id: str) -> SessionCost:
        """The tenant's session's cost (SessionNotFoundError for another's or none)."""
        with self._store.transaction() as tx:
            self._store.require(tx, tenant, session_id)
            lines = tx.ledger.session_lines(tenant, session_id)
            compactions = tx.compactions.all(session_id)
        return self.session_cost(lines, compactions)

    def tenant_cost(self, tenant: str) -> TenantCost:
        """The tenant's calls by source, API and model, priced."""
        lines: list[tuple[tuple[str, str, str], CostPart]] = []
        unpriced: set[str] = set()
        for line in self.tenant_lines(tenant):
            part = CostPart()
            dollars = kind_dollars(line.tokens, self.prices(line.model))
            if dollars is None:
                unpriced.add(line.model)
            part.add(line, dollars)
            lines.append(((line.source, line.api, line.model), part))
        return TenantCost(lines, sorted(unpriced))

    def tenant_lines(self, tenant: str) -> list[LedgerLine]:
        """The tenant's calls summed by source, API and model."""
        with self._store.transaction() as tx:
            return tx.ledger.tenant_totals(tenant)

    def _observed(self, entry: LedgerEntry) -> None:
        if self.observer is None:
            return
        dollars = kind_dollars(entry.tokens, self.prices(entry.model))
        total = sum(dollars.values()) if dollars is not None else None
        self.observer.billed(entry.source, entry.api, by_kind(entry.tokens), total)
