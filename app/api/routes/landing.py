"""`GET /`: what this service is and where to go, as a small page or as JSON."""

from __future__ import annotations

from html import escape

import mimeparse
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from app import __version__

SERVICE = "context-compactor"
# Path and what a person finds there, in the order the page lists them.
LINKS = {
    "ui": ("/ui", "Inspector: sessions, their token curves and compactions"),
    "docs": ("/docs", "API reference (Swagger UI)"),
    "redoc": ("/redoc", "API reference (ReDoc)"),
    "openapi": ("/openapi.json", "OpenAPI document"),
    "health": ("/healthz", "Liveness"),
    "ready": ("/readyz", "Readiness"),
    "metrics": ("/metrics", "Prometheus metrics"),
}
_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

router = APIRouter(include_in_schema=False)


def wants_json(accept: str) -> bool:
    """Whether an Accept header prefers JSON to HTML (a tie, `*/*` or garbage: HTML)."""
    try:
        best: str = mimeparse.best_match(["application/json", "text/html"], accept)
    except (mimeparse.MimeTypeParseException, ValueError):
        return False
    return best == "application/json"


@router.get("/")
async def landing(request: Request) -> Response:
    """Links to the inspector and the API reference; JSON when the client asks for it."""
    root = str(request.scope.get("root_path", "")).rstrip("/")
    links = {name: root + path for name, (path, _) in LINKS.items()}
    vary = {"Vary": "Accept"}
    if wants_json(request.headers.get("accept", "")):
        return JSONResponse(
            {"service": SERVICE, "version": __version__, "links": links}, headers=vary
        )
    items = "\n".join(
        f'<li><a href="{escape(links[name])}">{escape(path)}</a>: {escape(label)}</li>'
        for name, (path, label) in LINKS.items()
    )
    page = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{SERVICE}</title>
</head>
<body>
<h1>{SERVICE} {escape(__version__)}</h1>
<p>Context management for LLM agents: estimate, decide, compact.</p>
<ul>
{items}
</ul>
</body>
</html>
"""
    headers = {**vary, "Content-Security-Policy": _CSP, "X-Content-Type-Options": "nosniff"}
    return HTMLResponse(page, headers=headers)
