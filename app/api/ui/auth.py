"""Who is looking at the inspector: a Bearer key, or the cookie the login form set.

The cookie holds a SHA-256 digest of the API key, not the key: it opens the inspector
(Path=/ui) and nothing else, since the API itself accepts only the key as a Bearer token.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlsplit

from fastapi import Request, Response

from app.api.auth import DEFAULT_TENANT
from app.api.deps import get_state

COOKIE_NAME = "compactor_ui"
COOKIE_PATH = "/ui"
# A login lasts a working day; the cookie ends with the browser session at the latest then.
COOKIE_MAX_AGE = 12 * 3600


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def keys_configured(request: Request) -> bool:
    return bool(get_state(request).api_keys)


def tenant_of_digest(request: Request, digest: str) -> str | None:
    """The tenant whose key has this digest; every key is compared, whichever matches."""
    keys = get_state(request).api_keys
    tenant = None
    for key, owner in keys.items():
        if hmac.compare_digest(key_digest(key).encode(), digest.encode()):
            tenant = owner
    return tenant


def ui_tenant(request: Request) -> str | None:
    """The viewer's tenant, or None when they must log in first."""
    if not keys_configured(request):
        return DEFAULT_TENANT
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and presented.strip():
        return tenant_of_digest(request, key_digest(presented.strip()))
    cookie = request.cookies.get(COOKIE_NAME)
    return tenant_of_digest(request, cookie) if cookie else None


def set_login_cookie(request: Request, response: Response, key: str) -> None:
    response.set_cookie(
        COOKIE_NAME,
        key_digest(key),
        max_age=COOKIE_MAX_AGE,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def clear_login_cookie(request: Request, response: Response) -> None:
    response.delete_cookie(
        COOKIE_NAME,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def safe_next(target: str | None) -> str:
    """Where to go after logging in: an inspector path on this site, never elsewhere."""
    if not target:
        return "/ui"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/ui") or "\\" in target:
        return "/ui"
    return target
