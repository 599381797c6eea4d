"""The cost ledger's view of a session → its HTTP answer."""

from __future__ import annotations

from app.api.schemas.cost import (
    CostLineOut,
    CostPartOut,
    DollarsByKind,
    SessionCostOut,
    TenantCostOut,
    TokensByKind,
    UncompactedOut,
)
from app.services.cost_ledger import CostPart, SessionCost, TenantCost


def _part(part: CostPart) -> CostPartOut:
    t = part.tokens
    dollars = part.dollars
    return CostPartOut(
        calls=part.calls,
        tokens=TokensByKind(
            input_tokens=t.input_tokens,
            cache_write_tokens=t.cache_write_tokens,
            cache_read_tokens=t.cache_read_tokens,
            output_tokens=t.output_tokens,
        ),
        cost_usd=None if dollars is None else DollarsByKind(**dollars, total=sum(dollars.values())),
    )


def session_cost_out(session_id: str, cost: SessionCost) -> SessionCostOut:
    """The answer of `GET /sessions/{id}/cost`."""
    return SessionCostOut(
        session_id=session_id,
        upstream=_part(cost.upstream),
        summarizer=_part(cost.summarizer),
        total_cost_usd=cost.total,
        uncompacted=UncompactedOut(
            folded_tokens=cost.folded_tokens, cost_usd=cost.uncompacted_dollars
        ),
        saved_usd=cost.saved,
        unpriced_models=cost.unpriced_models,
    )


def tenant_cost_out(cost: TenantCost) -> TenantCostOut:
    """The answer of `GET /cost`."""
    lines = [
        CostLineOut(source=source, api=api, model=model, **_part(part).model_dump())
        for (source, api, model), part in cost.lines
    ]
    return TenantCostOut(
        lines=lines, total_cost_usd=cost.total, unpriced_models=cost.unpriced_models
    )
