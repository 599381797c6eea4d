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


Tenant = Annotated[str, Depends(current_tenant)]
