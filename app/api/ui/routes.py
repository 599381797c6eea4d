"""Inspector pages: the sessions list, one session, and the login form for a browser."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, quote

import anyio
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from app.api.auth import tenant_of_key
from app.api.deps import Sessions, State
from app.api.problems import ApiError
from app.api.ui.auth import (
    COOKIE_NAME,
    clear_login_cookie,
    keys_configured,
    safe_next,
    same_site_only,
    set_login_cookie,
    ui_tenant,
)
from app.api.ui.chart import layout_chart, tokens_label
from app.services.inspector.reading import InspectorService
from app.services.sessions.errors import SessionNotFoundError

SESSIONS_PER_PAGE = 25
ENTRIES_PER_PAGE = 50
_TEMPLATES = Path(__file__).parent / "templates"

_environment = Environment(
    loader=FileSystemLoader(_TEMPLATES),
    # Every transcript string is text, never markup.
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_environment.filters["tokens"] = lambda n: f"{n:,}"
_environment.filters["short_tokens"] = tokens_label
templates = Jinja2Templates(env=_environment)

# Far past any real transcript; bounds what reaches the database as an offset.
MAX_PAGE = 10**9

# Every state-changing request (login, logout) made by another site's page is refused.
router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(same_site_only)])

Viewer = Annotated[str | None, Depends(ui_tenant)]


def get_inspector(sessions: Sessions) -> InspectorService:
    return InspectorService(sessions)


Inspector = Annotated[InspectorService, Depends(get_inspector)]
PageNumber = Annotated[int, Query(ge=1, le=MAX_PAGE)]


def _render(
    request: Request, name: str, context: dict[str, Any], status_code: int = 200
) -> HTMLResponse:
    """A page with a per-response nonce: only its own inline style and script run."""
    nonce = secrets.token_urlsafe(16)
    response = templates.TemplateResponse(
        request,
        name,
        # `logged_in` shows the Log out button: only where API keys make a login.
        {"logged_in": keys_configured(request), **context, "nonce": nonce},
        status_code=status_code,
    )
    response.headers["Content-Security-Policy"] = (
        f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; "
        "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def _to_login(request: Request) -> RedirectResponse:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/ui/login?next={quote(target, safe='')}", status_code=303)


@router.get("", response_class=HTMLResponse)
def sessions_page(
    request: Request,
    viewer: Viewer,
    inspector: Inspector,
    page: PageNumber = 1,
) -> Response:
    """The viewer's sessions, newest first, a page at a time."""
    if viewer is None:
        return _to_login(request)
    listing = inspector.list_sessions(viewer, page, SESSIONS_PER_PAGE)
    return _render(
        request,
        "sessions.html",
        {"listing": listing, "tenant": viewer},
    )


@router.get("/sessions/{session_id}", response_class=HTMLResponse)
def session_page(
    request: Request,
    session_id: str,
    viewer: Viewer,
    inspector: Inspector,
    sessions: Sessions,
    page: PageNumber = 1,
) -> Response:
    """One session: its token curve, compactions with summary diffs, and its transcript."""
    if viewer is None:
        return _to_login(request)
    try:
        inspection = inspector.inspect(viewer, session_id, page, ENTRIES_PER_PAGE)
    except SessionNotFoundError:
        return _render(
            request,
            "not_found.html",
            {"session_id": session_id},
            status_code=404,
        )
    return _render(
        request,
        "session.html",
        {
            "inspection": inspection,
            "chart": layout_chart(inspection.curve),
            "changes": sessions.settings_changes(viewer, session_id),
            "entries_per_page": ENTRIES_PER_PAGE,
            "tenant": viewer,
        },
    )


@router.post("/sessions/{session_id}/compactions/{compaction_id}/revert")
def revert_compaction(
    request: Request, session_id: str, compaction_id: str, viewer: Viewer, sessions: Sessions
) -> Response:
    """The Revert button: a `revert` record, then the session's page again. Only from
    the inspector's own pages (the router refuses cross-site posts)."""
    if viewer is None:
        return _to_login(request)
    sessions.revert(viewer, session_id, compaction_id)
    return RedirectResponse(f"/ui/sessions/{quote(session_id, safe='')}#compactions", 303)


@router.post("/sessions/{session_id}/fork")
async def fork_session(
    request: Request, session_id: str, viewer: Viewer, sessions: Sessions
) -> Response:
    """The Fork button: a new session from entries 0..at_seq, then its page."""
    if viewer is None:
        return _to_login(request)
    form = parse_qs((await request.body()).decode("utf-8", errors="replace"))
    raw = (form.get("at_seq") or [""])[0].strip()
    if not raw.isdigit():
        raise ApiError(
            422, "Invalid fork point", "at_seq must be an entry number", "invalid-fork-point"
        )
    fork = await anyio.to_thread.run_sync(sessions.fork, viewer, session_id, int(raw))
    return RedirectResponse(f"/ui/sessions/{quote(fork.id, safe='')}", 303)


@router.get("/requests", response_class=HTMLResponse)
def requests_page(request: Request, viewer: Viewer, state: State) -> Response:
    """The viewer's recent stateless proxy requests and what the proxy decided for each."""
    if viewer is None:
        return _to_login(request)
    decisions = state.recent_decisions
    return _render(
        request,
        "requests.html",
        {
            "decisions": [(datetime.fromtimestamp(d.at, UTC), d) for d in decisions.recent(viewer)],
            "kept": decisions.per_tenant,
            "with_content": decisions.with_content,
            "tenant": viewer,
        },
    )


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str | None = None) -> Response:
    """The form that takes an API key once and keeps it in a cookie for /ui."""
    return _render(
        request,
        "login.html",
        {"next": safe_next(next), "error": None, "keys": keys_configured(request)},
    )


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request, state: State) -> Response:
    """Checks the key; a valid one starts a login (ending the browser's previous one),
    sets its cookie and goes on to the page asked for."""
    form = parse_qs((await request.body()).decode("utf-8", errors="replace"))
    key = (form.get("key") or [""])[0].strip()
    target = safe_next((form.get("next") or [""])[0])
    if not state.api_keys:
        return RedirectResponse(target, status_code=303)
    tenant = tenant_of_key(state.api_keys, key) if key else None
    if tenant is None:
        return _render(
            request,
            "login.html",
            {"next": target, "error": "That API key is not valid.", "keys": True},
            status_code=401,
        )
    previous = request.cookies.get(COOKIE_NAME)
    token = await anyio.to_thread.run_sync(state.ui_logins.log_in, tenant, key, previous)
    response = RedirectResponse(target, status_code=303)
    set_login_cookie(request, response, token)
    return response


@router.post("/logout")
def logout(request: Request, state: State) -> Response:
    """Ends this browser's login on the server (every replica) and clears its cookie."""
    token = request.cookies.get(COOKIE_NAME)
    if token and state.api_keys:
        state.ui_logins.log_out(token)
    response = RedirectResponse("/ui/login", status_code=303)
    clear_login_cookie(request, response)
    return response
