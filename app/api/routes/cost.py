"""The tenant's cost ledger (SPEC §15): `GET /cost`."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.auth import Tenant
from app.api.deps import Sessions
from app.api.mappers.cost import tenant_cost_out
from app.api.problems import documented
from app.api.routing import OrjsonRoute
from app.api.schemas.cost import TenantCostOut
from app.services.sessions.errors import StoreUnavailableError

router = APIRouter(tags=["cost"], route_class=OrjsonRoute)


@router.get("/cost", response_model=TenantCostOut, responses=documented(StoreUnavailableError))
def get_tenant_cost(tenant: Tenant, sessions: Sessions) -> TenantCostOut:
    """What the caller's tenant was billed, by source (`upstream`: proxied requests, bound
    or stateless; `summarizer`: summary calls), API (or summarizer provider) and model:
    tokens by kind as the upstream's usage reported them, dollars at the registry's prices
    (null for a model with no price for a kind it used)."""
    return tenant_cost_out(sessions.ledger.tenant_cost(tenant))
