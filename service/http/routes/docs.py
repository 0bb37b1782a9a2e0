"""/docs (Swagger UI) and /redoc (ReDoc): the pages that render /openapi.json, with every
file they load served by the service itself.

The assets are fastapi-offline's copies of Swagger UI and ReDoc, served from the package,
so the pages work on an offline or locked-down host and a reader's browser contacts no
one else. Two fetches the bundles would still make are turned off here: ReDoc's sidebar
footer loads its logo from cdn.redoc.ly (the URL is in the bundle; it is replaced by an
inline image as the file is served), and Swagger UI sends the document's URL to
validator.swagger.io for a badge (``validatorUrl: null``). No Google Fonts either: ReDoc
falls back to the reader's own fonts. tests/browser/test_api_docs.py loads both pages in
Chromium and checks that every request stays on the service.

Only the files listed in ``ASSETS`` are served: the asset path is never joined from
user input. They are read once (they only change with the installed package).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request, Response
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse

from ...errors import NotFound

#: fastapi-offline's folder of Swagger UI and ReDoc files.
ASSET_DIR = Path(fastapi_offline.__file__).resolve().parent / "static"

#: Served asset name -> media type.
ASSETS = {"swagger-ui-bundle.js": "text/javascript; charset=utf-8",
          "swagger-ui.css": "text/css; charset=utf-8",
          "redoc.standalone.js": "text/javascript; charset=utf-8",
          "favicon.png": "image/png"}

#: In the ReDoc bundle: the footer's logo, fetched from Redocly's CDN by every page view.
REDOC_CDN_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
#: What the page shows instead: an empty 1x1 image, inline (no request at all).
_INLINE_IMAGE = (b"data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' "
                 b"width='1' height='1'/%3E")

# The same bytes until the package is upgraded (which restarts the process).
_HEADERS = {"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"}


@cache
def asset_bytes(name: str) -> bytes:
    """The file as served: the ReDoc bundle without its CDN logo URL, others as shipped."""
    data = (ASSET_DIR / name).read_bytes()
    if name == "redoc.standalone.js":
        data = data.replace(REDOC_CDN_LOGO, _INLINE_IMAGE)
    return data


def install_docs(app: FastAPI, *, openapi_url: str, static_url: str) -> None:
    """Add /docs, /docs/oauth2-redirect, /redoc and ``static_url``/{asset} to ``app``
    (left out of the document: they are for reading it)."""
    title = app.title
    oauth2_redirect = "/docs/oauth2-redirect"

    async def swagger_page(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=root + openapi_url, title=f"{title} - Swagger UI",
            oauth2_redirect_url=root + oauth2_redirect,
            swagger_js_url=f"{root}{static_url}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{static_url}/swagger-ui.css",
            swagger_favicon_url=f"{root}{static_url}/favicon.png",
            swagger_ui_parameters={"validatorUrl": None})

    async def oauth2_redirect_page() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    async def redoc_page(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=root + openapi_url, title=f"{title} - ReDoc",
            redoc_js_url=f"{root}{static_url}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{static_url}/favicon.png", with_google_fonts=False)

    async def docs_asset(asset: str) -> Response:
        media_type = ASSETS.get(asset)
        if media_type is None:
            raise NotFound(f"no docs asset named {asset!r}", available=sorted(ASSETS))
        return Response(asset_bytes(asset), media_type=media_type, headers=_HEADERS)

    for path, endpoint in (("/docs", swagger_page), (oauth2_redirect, oauth2_redirect_page),
                           ("/redoc", redoc_page), (static_url + "/{asset}", docs_asset)):
        app.add_api_route(path, endpoint, methods=["GET"], include_in_schema=False)
