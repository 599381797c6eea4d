"""The service's Prometheus metrics, in a registry of their own (one per app)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_TOKEN_BUCKETS = (1e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1.5e5, 2e5, 5e5, 1e6)


class Metrics:
    """The service's metrics, in a registry of their own (one per app)."""

    def __init__(self) -> None:
        # Set by `compactor serve --workers N` (N > 1) for every worker: the values live in
        # files there and each scrape adds up all workers (prometheus_client's multiprocess
        # mode), so a counter never goes backwards whichever worker answers.
        self.multiprocess_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "compactor_http_requests",
            "HTTP requests by route template, method and status.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "compactor_http_request_duration_seconds",
            "HTTP request latency by route template and method.",
            ["route", "method"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.compactions = Counter(
            "compactor_compactions",
            "Compaction attempts by trigger and outcome.",
            ["trigger", "outcome"],
            registry=self.registry,
        )
        self.tokens_before = Histogram(
            "compactor_compaction_tokens_before",
            "Context tokens before a compaction.",
            buckets=_TOKEN_BUCKETS,
            registry=self.registry,
        )
        self.tokens_after = Histogram(
            "compactor_compaction_tokens_after",
            "Context tokens after a compaction.",
            buckets=_TOKEN_BUCKETS,
            registry=self.registry,
        )
        self.summarizer_calls = Counter(
            "compactor_summarizer_calls",
            "Summary attempts by provider and outcome (ok, truncated, failed).",
            ["provider", "outcome"],
            registry=self.registry,
        )
        self.summarizer_retries = Counter(
            "compactor_summarizer_retries",
            "Summary retries: transport retries (reason: status code or connection) and "
            "truncation retries at a lower thinking level (reason: truncated).",
            ["provider", "reason"],
            registry=self.registry,
        )
        self.summarizer_failures = Counter(
            "compactor_summarizer_failures",
            "Compactions that failed in the summarizer, by error kind.",
            ["provider", "kind"],
            registry=self.registry,
        )

        self.proxy_requests = Counter(
            "compactor_proxy_requests",
            "Proxied requests by API, upstream status and whether the answer was streamed.",
            ["api", "status", "streamed"],
            registry=self.registry,
        )
        self.proxy_compactions = Counter(
            "compactor_proxy_compactions",
            "Compactions the proxy applied before forwarding, by API and trigger.",
            ["api", "trigger"],
            registry=self.registry,
        )
        self.proxy_summary_cache = Counter(
            "compactor_proxy_summary_cache",
            "Summary cache lookups of histories over the threshold, by API and result.",
            ["api", "result"],
            registry=self.registry,
        )
        self.prepared_summaries = Counter(
            "compactor_prepared_summaries",
            "Summaries prepared ahead in the background (SPEC §16), by outcome.",
            ["outcome"],
            registry=self.registry,
        )
        self.prepared_wasted_total = Counter(
            "compactor_prepared_wasted",
            "Summaries prepared ahead that no turn used before the next one was prepared.",
            registry=self.registry,
        )
        self.proxy_overflow_retries = Counter(
            "compactor_proxy_overflow_retries",
            "Upstream context overflows, by API and outcome (retried, nothing_to_compact).",
            ["api", "outcome"],
            registry=self.registry,
        )

        self.upstream_tokens = Counter(
            "compactor_upstream_tokens",
            "Tokens billed as the upstream's usage reported them (SPEC §15), by kind (input: "
            "uncached, cache_write, cache_read, output), API (or summarizer provider) and "
            "source (upstream: proxied requests; summarizer: a session's summary calls).",
            ["kind", "api", "source"],
            registry=self.registry,
        )
        self.cost_usd = Counter(
            "compactor_cost_usd",
            "US dollars those tokens cost at the registry's prices (calls whose model has "
            "no price are not counted here), by API and source.",
            ["api", "source"],
            registry=self.registry,
        )

    # The CostObserver protocol of app.services.cost_ledger:

    def billed(
        self, source: str, api: str, tokens: Mapping[str, int], dollars: float | None
    ) -> None:
        for kind, count in tokens.items():
            self.upstream_tokens.labels(kind, api, source).inc(count)
        if dollars is not None:
            self.cost_usd.labels(api, source).inc(dollars)

    # The ProxyObserver protocol of app.services.proxy.call:

    def proxied(self, api: str, status: int, streamed: bool) -> None:
        self.proxy_requests.labels(api, str(status), "true" if streamed else "false").inc()

    def proxy_compacted(self, api: str, trigger: str) -> None:
        self.proxy_compactions.labels(api, trigger).inc()

    def summary_cache_lookup(self, api: str, hit: bool) -> None:
        self.proxy_summary_cache.labels(api, "hit" if hit else "miss").inc()

    def overflow_retry(self, api: str, outcome: str) -> None:
        self.proxy_overflow_retries.labels(api, outcome).inc()

    # The PrepareObserver protocol of app.services.prepared_observer:

    def prepared_summary(self, outcome: str) -> None:
        self.prepared_summaries.labels(outcome).inc()

    def prepared_wasted(self) -> None:
        self.prepared_wasted_total.inc()

    def exposition(self) -> bytes:
        """The Prometheus text of this process, or of all workers in multiprocess mode."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        combined = CollectorRegistry()
        MultiProcessCollector(combined, path=self.multiprocess_dir)  # type: ignore[no-untyped-call]
        return generate_latest(combined)

    # The CompactionObserver protocol of app.services.compaction:

    def compaction_finished(
        self, trigger: str, outcome: str, tokens_before: int, tokens_after: int | None
    ) -> None:
        self.compactions.labels(trigger, outcome).inc()
        if outcome == "compacted" and tokens_after is not None:
            self.tokens_before.observe(tokens_before)
            self.tokens_after.observe(tokens_after)

    def summarizer_attempts(self, provider: str, attempts: int, ok: bool) -> None:
        retries = max(0, attempts - 1)
        if retries:
            self.summarizer_retries.labels(provider, "truncated").inc(retries)
            self.summarizer_calls.labels(provider, "truncated").inc(retries)
        self.summarizer_calls.labels(provider, "ok" if ok else "failed").inc()

    def summarizer_failed(self, provider: str, kind: str) -> None:
        self.summarizer_failures.labels(provider, kind).inc()
