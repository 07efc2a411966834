"""Swagger UI and ReDoc served by the service itself, so ``/docs`` works without internet.

FastAPI's default pages load their JavaScript and CSS from a CDN: on an air-gapped cluster they
are blank. The assets come from the ``fastapi-offline`` package's static directory (installed with
the planner, not copied into this repository) and are served under ``/docs-static``; ``/docs``
and ``/redoc`` are FastAPI's own page builders pointed at them. ReDoc's bundle shows Redocly's logo
from Redocly's CDN in its sidebar: the service serves the bundle with that address replaced by an
inline image (``REDOC_LOGO``), so the page makes no request outside the service.
"""

from __future__ import annotations

import importlib.resources

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

DOCS_PATHS = ("/docs", "/redoc", "/openapi.json")
STATIC_PREFIX = "/docs-static"
REDOC_CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
REDOC_LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/%3E"
"""An empty 1x1 SVG in place of the CDN logo (an image of ReDoc's attribution link; the link stays)."""


def add_docs(app: FastAPI) -> None:
    """``/docs`` (Swagger UI), ``/redoc`` and their assets under ``/docs-static``."""
    assets = importlib.resources.files("fastapi_offline") / "static"
    redoc_js = (assets / "redoc.standalone.js").read_text(encoding="utf-8").replace(REDOC_CDN_LOGO, REDOC_LOGO)

    @app.get(f"{STATIC_PREFIX}/redoc.standalone.js", include_in_schema=False)
    def redoc_bundle() -> Response:  # before the mount below: this route answers first
        return Response(redoc_js, media_type="text/javascript")

    app.mount(STATIC_PREFIX, StaticFiles(directory=str(assets)), name="docs-static")

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title}: API",
            swagger_js_url=f"{STATIC_PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC_PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{STATIC_PREFIX}/favicon.png",
            swagger_ui_parameters={"persistAuthorization": True},
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url="/openapi.json",
            title=f"{app.title}: API",
            redoc_js_url=f"{STATIC_PREFIX}/redoc.standalone.js",
            redoc_favicon_url=f"{STATIC_PREFIX}/favicon.png",
            with_google_fonts=False,
        )


def is_docs_path(path: str) -> bool:
    return path in DOCS_PATHS or path.startswith(STATIC_PREFIX + "/")
