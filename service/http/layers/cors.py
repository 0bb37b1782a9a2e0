"""CORS, when ``cors_origins`` is set: Starlette's middleware, outermost, so it answers
preflights itself and adds its headers to every response of ours."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp


class Cors(CORSMiddleware):
    """The pages of ``origins`` may call the API: GET, HEAD and POST, with the headers
    the API reads, and ``X-Request-ID`` readable by the page."""

    def __init__(self, app: ASGIApp, *, origins: Sequence[str]) -> None:
        super().__init__(app, allow_origins=list(origins),
                         allow_methods=["GET", "HEAD", "POST"],
                         allow_headers=["Authorization", "Content-Type", "X-Request-ID"],
                         expose_headers=["X-Request-ID"], max_age=600)
