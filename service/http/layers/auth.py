"""Bearer auth, when ``auth_token`` is set: every operation the table does not mark open
(health, the page and its assets, /admin/* which checks its own token, the API docs)
needs ``Authorization: Bearer <token>``, else 401. The playground page asks for the
token itself and sends it on every API call.

Some paths have a rule of their own (``own``: path -> the token it needs, None for
none): /metrics takes ``metrics_token`` when one is set, and no token with
``metrics_open`` (``Settings.metrics_bearer``), so a scraper needs no API credential.
Without a token for any path this layer is not in the stack."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import HEADERS_BY_STATUS, error_response
from ..bearer import token_matches
from .answers import REQUEST_ID, answer, header


class BearerAuth:
    """``token``: the API's (None: the API is open); ``open_paths``: (exact paths, path
    prefixes) served without it; ``own``: paths with their own token (None: open);
    ``renderers``: path -> its error shape, where it is not the contract's."""

    def __init__(self, app: ASGIApp, *, token: bytes | None,
                 open_paths: tuple[frozenset[str], tuple[str, ...]],
                 renderers: Mapping[str, Callable[..., object]],
                 own: Mapping[str, bytes | None] | None = None) -> None:
        self.app = app
        self._token = token
        self._open, self._open_prefixes = open_paths
        self._renderers = renderers
        self._own = dict(own or {})

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        path = scope["path"]
        if path in self._own:
            needed = self._own[path]
        elif path in self._open or path.startswith(self._open_prefixes):
            needed = None
        else:
            needed = self._token
        if needed is None:
            return self.app(scope, receive, send)
        authorization = header(scope, b"authorization")
        if token_matches(authorization, needed):
            return self.app(scope, receive, send)
        why = "missing" if not authorization else "invalid"
        refusal = self._renderers.get(path, error_response)(
            401, "unauthorized", f"{why} bearer token; send 'Authorization: Bearer <token>'",
            HEADERS_BY_STATUS[401], request_id=scope[REQUEST_ID])
        return answer(refusal, scope, receive, send)
