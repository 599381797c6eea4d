"""The API reference pages, `/docs` (Swagger UI) and `/redoc`, working offline.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so they are blank without the
internet. Here the assets come from the `fastapi-offline` package (its `static/` folder:
swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js), served under `/docs/assets`,
and the pages hold no inline script, so a strict CSP (`'self'` only) keeps them from
loading anything from anywhere else. Like `/openapi.json`, they need no API key.
"""

from __future__ import annotations

from html import escape

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS_PATH = "/docs/assets"
ASSETS_PACKAGE = ("fastapi_offline", "static")

# Swagger UI and ReDoc set element styles and (ReDoc) inject <style> elements and run a
# worker from a blob: URL; scripts come only from this origin.
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src blob:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)

# validatorUrl null: Swagger UI would otherwise show a badge fetched from
# validator.swagger.io for the document.
_SWAGGER_INIT = """\
window.addEventListener("DOMContentLoaded", function () {
  var holder = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: holder.dataset.openapiUrl,
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  });
});
"""

router = APIRouter(include_in_schema=False)


def _page(title: str, root: str, head: str, body: str) -> HTMLResponse:
    html = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<link rel="icon" type="image/png" href="{escape(root)}{ASSETS_PATH}/favicon.png">
{head}
</head>
<body>
{body}
</body>
</html>
"""
    return HTMLResponse(html, headers=_headers())


def _headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": _CSP,
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
    }


def _root(request: Request) -> str:
    root: str = request.scope.get("root_path", "")
    return root.rstrip("/")


def _openapi_url(request: Request) -> str:
    return _root(request) + (request.app.openapi_url or "/openapi.json")


@router.get("/docs", response_class=HTMLResponse)
async def swagger_ui(request: Request) -> HTMLResponse:
    """Swagger UI for the OpenAPI document, from assets served by this service."""
    root, spec = escape(_root(request)), escape(_openapi_url(request))
    head = f'<link rel="stylesheet" href="{root}{ASSETS_PATH}/swagger-ui.css">'
    body = (
        f'<div id="swagger-ui" data-openapi-url="{spec}"></div>\n'
        f'<script src="{root}{ASSETS_PATH}/swagger-ui-bundle.js"></script>\n'
        f'<script src="{root}/docs/swagger-init.js"></script>'
    )
    return _page(f"{request.app.title} - Swagger UI", _root(request), head, body)


@router.get("/docs/swagger-init.js")
async def swagger_init() -> Response:
    """The script that starts Swagger UI (a file, not inline, so the CSP needs no hash)."""
    return Response(_SWAGGER_INIT, media_type="text/javascript", headers=_headers())


@router.get("/redoc", response_class=HTMLResponse)
async def redoc(request: Request) -> HTMLResponse:
    """ReDoc for the OpenAPI document, from assets served by this service."""
    root, spec = escape(_root(request)), escape(_openapi_url(request))
    body = (
        f'<redoc spec-url="{spec}"></redoc>\n'
        f'<script src="{root}{ASSETS_PATH}/redoc.standalone.js"></script>'
    )
    return _page(f"{request.app.title} - ReDoc", _root(request), "", body)


def install_offline_docs(app: FastAPI) -> None:
    """Serves `/docs`, `/redoc` and their assets; the app must be built with
    `docs_url=None, redoc_url=None` so FastAPI's CDN pages are not registered too."""
    if app.docs_url is not None or app.redoc_url is not None:
        raise ValueError("build the app with docs_url=None and redoc_url=None")
    app.include_router(router)
    app.mount(ASSETS_PATH, StaticFiles(packages=[ASSETS_PACKAGE]), name="docs-assets")
