"""API keys and tenants: `COMPACTOR_API_KEYS=tenant:key,…`."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request

from app.api.deps import get_state
from app.api.problems import ApiError

DEFAULT_TENANT = "default"
MIN_KEY_LENGTH = 8


def parse_api_keys(spec: str | None) -> dict[str, str]:
    """`tenant:key,tenant:key` → {key: tenant}; raises ValueError naming the bad entry.

    None means no keys are configured. Configuration that is there but holds no key
    (" ", ",,,", a file with only a newline) is refused: starting unauthenticated because
    a secret came out blank is the one failure nobody would notice. So is one key given
    to two tenants (which tenant would its caller be?)."""
    if spec is None:
        return {}
    keys: dict[str, str] = {}
    for index, item in enumerate(part.strip() for part in spec.split(",")):
        if not item:
            continue
        tenant, sep, key = item.partition(":")
        tenant, key = tenant.strip(), key.strip()
        if not sep or not tenant or len(key) < MIN_KEY_LENGTH:
            raise ValueError(
                f"COMPACTOR_API_KEYS entry {index + 1} must be tenant:key with a key of at "
                f"least {MIN_KEY_LENGTH} characters"
            )
        owner = keys.setdefault(key, tenant)
        if owner != tenant:
            raise ValueError(
                f"COMPACTOR_API_KEYS entry {index + 1} gives tenant {tenant!r} the key of "
                f"tenant {owner!r}; every tenant needs a key of its own"
            )
    if not keys:
        raise ValueError(
            "COMPACTOR_API_KEYS / COMPACTOR_API_KEYS_FILE is set but holds no tenant:key "
            "entry; give at least one key, or unset both to run without keys"
        )
    return keys


def check_metrics_key(metrics_key: str | None, keys: dict[str, str]) -> None:
    """Refuses a metrics key that is too short or is also a tenant's key (ValueError)."""
    if metrics_key is None:
        return
    if len(metrics_key.strip()) < MIN_KEY_LENGTH:
        raise ValueError(f"COMPACTOR_METRICS_KEY must be at least {MIN_KEY_LENGTH} characters")
    if metrics_key.strip() in keys:
        raise ValueError(
            "COMPACTOR_METRICS_KEY is also a tenant's key in COMPACTOR_API_KEYS; give the "
            "metrics their own key"
        )


def metrics_reader(request: Request) -> None:
    """Who may read /metrics, which sums every tenant's traffic: anyone when neither API
    keys nor COMPACTOR_METRICS_KEY are set (loopback), else only the metrics key."""
    state = get_state(request)
    configured = state.settings.metrics_key_value()
    if configured is None and not state.api_keys:
        return
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not presented.strip():
        raise ApiError(
            401, "Unauthorized", "send Authorization: Bearer <metrics key>", "unauthorized"
        )
    given = presented.strip().encode()
    if configured is not None and hmac.compare_digest(configured.strip().encode(), given):
        return
    if tenant_of_key(state.api_keys, presented) is None:
        raise ApiError(401, "Unauthorized", "the API key is not valid", "unauthorized")
    remedy = (
        "send the metrics key (COMPACTOR_METRICS_KEY) instead"
        if configured is not None
        else "the operator sets COMPACTOR_METRICS_KEY and scrapes with that key"
    )
    raise ApiError(
        403,
        "Forbidden",
        f"/metrics adds up every tenant's traffic, so a tenant's key does not read it: {remedy}",
        "forbidden",
    )


PROXY_KEY_HEADER = "x-compactor-key"


def current_tenant(request: Request) -> str:
    """The caller's tenant: from its Bearer key when keys are configured."""
    keys = get_state(request).api_keys
    if not keys:
        return DEFAULT_TENANT
    header = request.headers.get("authorization", "")
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer" or not presented:
        raise ApiError(401, "Unauthorized", "send Authorization: Bearer <api key>", "unauthorized")
    return _tenant_of(keys, presented)


def proxy_tenant(request: Request) -> str:
    """The tenant of a proxied request: its service key travels in `X-Compactor-Key`,
    because `Authorization` carries the caller's credentials for the upstream."""
    keys = get_state(request).api_keys
    if not keys:
        return DEFAULT_TENANT
    presented = request.headers.get(PROXY_KEY_HEADER, "")
    if not presented.strip():
        raise ApiError(
            401,
            "Unauthorized",
            "send the service's API key in X-Compactor-Key (Authorization goes to the upstream)",
            "unauthorized",
        )
    return _tenant_of(keys, presented)


def tenant_of_key(keys: dict[str, str], presented: str) -> str | None:
    """The tenant whose key was presented, or None; every key is compared, whichever
    matches, so the time taken does not tell which one did."""
    tenant = None
    given = presented.strip().encode()
    for key, owner in keys.items():
        if hmac.compare_digest(key.encode(), given):
            tenant = owner
    return tenant


def _tenant_of(keys: dict[str, str], presented: str) -> str:
    tenant = tenant_of_key(keys, presented)
    if tenant is None:
        raise ApiError(401, "Unauthorized", "the API key is not valid", "unauthorized")
    return tenant


# The dependencies are coroutines: FastAPI runs a plain function in its thread pool, a
# hop to another thread and back on every request (each one waiting for a worker and
# for the GIL: on a busy machine a millisecond or more), for work that never blocks.
async def request_tenant(request: Request) -> str:
    """The caller's tenant (`current_tenant`) as a dependency."""
    return current_tenant(request)


async def request_proxy_tenant(request: Request) -> str:
    """The tenant of a proxied request (`proxy_tenant`) as a dependency."""
    return proxy_tenant(request)


async def request_metrics_reader(request: Request) -> None:
    """Who may read /metrics (`metrics_reader`) as a dependency."""
    metrics_reader(request)


Tenant = Annotated[str, Depends(request_tenant)]
