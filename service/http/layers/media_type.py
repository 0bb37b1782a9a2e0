"""A POST body must be of a media type its operation takes (``operations.table``:
``consumes``; JSON in UTF-8, NDJSON for the stream), else 415. Refusing other types
closes the browser's "simple request" route: a web page cannot POST JSON cross-origin
without a CORS preflight, which the server can refuse."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import UnsupportedMediaType, error_response
from .answers import REQUEST_ID, answer


def json_media_type(value: bytes | None,
                    accepted: tuple[str, ...] = ("application/json",)) -> bool:
    """One of ``accepted`` (``application/json`` also admits ``application/<x>+json``),
    with a charset (if any) of UTF-8: what the JSON routes accept (RFC 8259 §8.1: JSON
    exchanged between systems is UTF-8)."""
    if not value:
        return False
    kind, *params = value.decode("latin-1").lower().split(";")
    kind = kind.strip()
    plus_json = kind.startswith("application/") and kind.endswith("+json")
    if kind not in accepted and not (plus_json and "application/json" in accepted):
        return False
    for param in params:
        name, _, val = param.strip().partition("=")
        if name.strip() == "charset" and val.strip().strip('"') not in ("utf-8", "utf8"):
            return False
    return True


class MediaType:
    """``consumes``: path -> the media types its POST operation takes; ``renderers``:
    path -> its error shape, where it is not the contract's."""

    def __init__(self, app: ASGIApp, *, consumes: Mapping[str, tuple[str, ...]],
                 renderers: Mapping[str, Callable[..., object]]) -> None:
        self.app = app
        self._consumes = consumes
        self._renderers = renderers
        # (Content-Type value, accepted types) -> accepted (memo)
        self._verdicts: dict[tuple[bytes, tuple[str, ...]], bool] = {}

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        consumes = self._consumes.get(scope["path"]) if scope["method"] == "POST" else None
        if not consumes:
            return self.app(scope, receive, send)
        content_type = None
        for key, value in scope["headers"]:  # answers.header, inline (the hot path)
            if key == b"content-type":
                content_type = value
        if content_type is not None:
            key = (content_type, consumes)
            accepted = self._verdicts.get(key)
            if accepted is None:
                accepted = json_media_type(content_type, consumes)
                if len(self._verdicts) < 64:  # callers send a handful of distinct values
                    self._verdicts[key] = accepted
            if accepted:
                return self.app(scope, receive, send)
        refusal = self._renderers.get(scope["path"], error_response)(
            415, UnsupportedMediaType.code,
            f"send the body with 'Content-Type: {consumes[0]}' (UTF-8)"
            + (f"; accepted: {', '.join(consumes)}" if len(consumes) > 1 else ""),
            request_id=scope[REQUEST_ID])
        return answer(refusal, scope, receive, send)
