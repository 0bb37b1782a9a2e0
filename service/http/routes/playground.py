"""GET / and /playground: the token viewer page, plus its two static assets.

The page is the reference client of our own offsets (plain HTML/CSS/JS in
``service/static/``, no build step, no CDN, works offline). It talks to the service
only through the public JSON API (/tokenizers, /encode, /count, /render_chat), so it
needs nothing from the app but its three rows of the operation table.

Only the files listed in ``ASSETS`` are served: the asset path is never joined from
user input, so there is no path traversal to guard against. The files are read per
request (they are a few kB) so an edited page shows up on reload without a restart.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import Response
from fastapi.responses import HTMLResponse

from ...errors import NotFound

#: Where the page lives: ``service/static/``, two levels up from these routes.
STATIC_DIR = Path(__file__).resolve().parents[2] / "static"

#: Served asset name -> media type. Anything else under /playground/ is a 404.
ASSETS = {
    "playground.js": "text/javascript; charset=utf-8",
    "playground.css": "text/css; charset=utf-8",
}

# The page changes with the code, not per request: let the browser revalidate each time.
_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}


def _read(name: str) -> bytes:
    return (STATIC_DIR / name).read_bytes()


async def playground_page() -> Response:
    """The page itself (same document at both paths; assets are linked absolutely)."""
    return HTMLResponse(_read("index.html"), headers=_HEADERS)


async def playground_asset(asset: str) -> Response:
    """One of the page's static files, by its exact name."""
    media_type = ASSETS.get(asset)
    if media_type is None:
        raise NotFound(f"no playground asset named {asset!r}", available=sorted(ASSETS))
    return Response(_read(asset), media_type=media_type, headers=_HEADERS)
