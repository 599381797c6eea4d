"""Who is looking at the inspector: a Bearer key, or the login cookie the form set.

The cookie holds a random login token, not the key nor anything derived from it; the
store knows the login (`InspectorLogins`), expires it and forgets it at logout. It opens
the inspector (Path=/ui) and nothing else: the API itself accepts only keys.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import Request, Response

from app.api.auth import DEFAULT_TENANT, tenant_of_key
from app.api.deps import get_state
from app.api.problems import ApiError

COOKIE_NAME = "compactor_ui"
COOKIE_PATH = "/ui"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def keys_configured(request: Request) -> bool:
    return bool(get_state(request).api_keys)


def ui_tenant(request: Request) -> str | None:
    """The viewer's tenant, or None when they must log in first."""
    state = get_state(request)
    if not state.api_keys:
        return DEFAULT_TENANT
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and presented.strip():
        return tenant_of_key(state.api_keys, presented)
    token = request.cookies.get(COOKIE_NAME)
    return state.ui_logins.tenant_of(token) if token else None


def set_login_cookie(request: Request, response: Response, token: str) -> None:
    response.set_cookie(
        COOKIE_NAME,
        token,
        max_age=get_state(request).ui_logins.lifetime_seconds,
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


def is_cross_site(request: Request) -> bool:
    """A request another site's page made (CSRF): the browser says so in its headers.

    `Sec-Fetch-Site` where the browser sends it; else an `Origin` that is not this host.
    An `Origin` of "null" is what a browser sends under Referrer-Policy: no-referrer from
    this site's own form too, so on its own it is not taken as cross-site."""
    if request.headers.get("sec-fetch-site", "").lower() in ("cross-site", "same-site"):
        return True
    origin = request.headers.get("origin")
    return origin not in (None, "null") and urlsplit(origin).netloc != request.headers.get("host")


def same_site_only(request: Request) -> None:
    """Refuses a state-changing request made by another site's page (403)."""
    if request.method not in _SAFE_METHODS and is_cross_site(request):
        raise ApiError(
            403,
            "Cross-site request refused",
            "the inspector takes logins and logouts only from its own pages: open /ui/login "
            "on this site and send the form from there",
            "cross-site-refused",
        )


def safe_next(target: str | None) -> str:
    """Where to go after logging in: an inspector path on this site, never elsewhere."""
    if not target:
        return "/ui"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/ui") or "\\" in target:
        return "/ui"
    return target
