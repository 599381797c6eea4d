"""API keys and tenants: `COMPACTOR_API_KEYS=tenant:key,…`."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request

from app.api.problems import ApiError

DEFAULT_TENANT = "default"


def parse_api_keys(spec: str) -> dict[str, str]:
    """`tenant:key,tenant:key` → {key: tenant}; raises ValueError naming the bad entry."""
    keys: dict[str, str] = {}
    for index, item in enumerate(part.strip() for part in spec.split(",")):
        if not item:
            continue
        tenant, sep, key = item.partition(":")
        if not sep or not tenant.strip() or len(key.strip()) < 8:
            raise ValueError(
                f"COMPACTOR_API_KEYS entry {index + 1} must be tenant:key with a key of at "
                "least 8 characters"
            )
        keys[key.strip()] = tenant.strip()
    return keys


PROXY_KEY_HEADER = "x-compactor-key"


def current_tenant(request: Request) -> str:
    """The caller's tenant: from its Bearer key when keys are configured."""
    keys: dict[str, str] = request.app.state.compactor.api_keys
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
    keys: dict[str, str] = request.app.state.compactor.api_keys
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


def _tenant_of(keys: dict[str, str], presented: str) -> str:
    tenant = None
    # Compare against every key so the time taken does not depend on which one matched.
    for key, owner in keys.items():
        if hmac.compare_digest(key.encode(), presented.strip().encode()):
            tenant = owner
    if tenant is None:
        raise ApiError(401, "Unauthorized", "the API key is not valid", "unauthorized")
    return tenant


Tenant = Annotated[str, Depends(current_tenant)]
