"""The cost of a session (SPEC §15): `GET /sessions/{id}/cost`."""

from __future__ import annotations

from pydantic import BaseModel, Field


class TokensByKind(BaseModel):
    """Tokens as the upstream's usage reported them."""

    input_tokens: int = Field(description="Uncached input tokens.")
    cache_write_tokens: int = Field(description="Input tokens written to the prompt cache.")
    cache_read_tokens: int = Field(description="Input tokens read from the prompt cache.")
    output_tokens: int


class DollarsByKind(BaseModel):
    """US dollars per kind of token, at the registry's prices for each call's model."""

    input: float
    cache_write: float
    cache_read: float
    output: float
    total: float


class CostPartOut(BaseModel):
    calls: int = Field(description="Billed calls with a usage report.")
    tokens: TokensByKind
    cost_usd: DollarsByKind | None = Field(
        description="Null when a call's model has no price for a kind it used."
    )


class UncompactedOut(BaseModel):
    """What the same upstream calls would have cost without the session's compactions."""

    folded_tokens: int = Field(
        description="Input tokens the compactions kept out of the calls after them, summed "
        "over those calls (per compaction: tokens_before - tokens_after)."
    )
    cost_usd: float | None = Field(
        description="The upstream calls' cost plus the folded tokens at each call's "
        "cache-read price (an uncompacted history only grows: its old prefix is a cache read)."
    )


class CostLineOut(CostPartOut):
    source: str = Field(description="upstream (proxied requests) or summarizer.")
    api: str = Field(description="The API (messages, chat_completions, …) or the provider.")
    model: str


class TenantCostOut(BaseModel):
    lines: list[CostLineOut] = Field(description="By source, API and model.")
    total_cost_usd: float | None = Field(description="Null when a line is unpriced.")
    unpriced_models: list[str]


class SessionCostOut(BaseModel):
    session_id: str
    upstream: CostPartOut = Field(description="Proxied requests of the session.")
    summarizer: CostPartOut = Field(description="The session's summary calls.")
    total_cost_usd: float | None
    uncompacted: UncompactedOut
    saved_usd: float | None = Field(
        description="uncompacted.cost_usd - total_cost_usd; negative when compacting cost "
        "more than it saved."
    )
    unpriced_models: list[str] = Field(
        description="Models some call used that the registry has no price for."
    )
