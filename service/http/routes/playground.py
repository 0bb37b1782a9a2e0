"""GET / and /playground: the token viewer page, plus its static assets.

The page is the reference client of our own offsets (plain HTML/CSS and ES modules in
``service/static/``, no build step, no CDN, works offline). It talks to the service
only through the public JSON API (/tokenizers, /models, /encode, /count, /render_chat), so it
needs nothing from the app but its three rows of the operation table.

Only the files listed in ``ASSETS`` (the folder's ``.js`` and ``.css`` files, listed once
at import) are served: the asset path is never joined from user input, so there is no
path traversal to guard against. The files are read per request (they are a few kB) so
an edited page shows up on reload without a restart (a new module needs one).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import Response
from fastapi.responses import HTMLResponse

from ...errors import NotFound

#: Where the page lives: ``service/static/``, two levels up from these routes.
STATIC_DIR = Path(__file__).resolve().parents[2] / "static"

#: Media type by suffix of the files the page is made of (a browser runs a module script
#: only when it is served as JavaScript).
_MEDIA_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}

#: Served asset name -> media type: the page's ES modules and its stylesheet, listed once
#: at import. Anything else under /playground/ is a 404 (index.html is the page itself).
ASSETS = {path.name: _MEDIA_TYPES[path.suffix]
          for path in sorted(STATIC_DIR.iterdir()) if path.suffix in _MEDIA_TYPES}

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
