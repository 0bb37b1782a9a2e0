"""Bearer auth, when ``auth_token`` is set: every operation the table does not mark open
(health, the page and its assets, /admin/* which checks its own token, the API docs)
needs ``Authorization: Bearer <token>``, else 401. The playground page asks for the
token itself and sends it on every API call. Without a token this layer is not in the
stack."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import HEADERS_BY_STATUS, error_response
from ..bearer import token_matches
from .answers import REQUEST_ID, answer, header


class BearerAuth:
    """``open_paths``: (exact paths, path prefixes) served without the token;
    ``renderers``: path -> its error shape, where it is not the contract's."""

    def __init__(self, app: ASGIApp, *, token: bytes,
                 open_paths: tuple[frozenset[str], tuple[str, ...]],
                 renderers: Mapping[str, Callable[..., object]]) -> None:
        self.app = app
        self._token = token
        self._open, self._open_prefixes = open_paths
        self._renderers = renderers

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        path = scope["path"]
        if path in self._open or path.startswith(self._open_prefixes):
            return self.app(scope, receive, send)
        authorization = header(scope, b"authorization")
        if token_matches(authorization, self._token):
            return self.app(scope, receive, send)
        why = "missing" if not authorization else "invalid"
        refusal = self._renderers.get(path, error_response)(
            401, "unauthorized", f"{why} bearer token; send 'Authorization: Bearer <token>'",
            HEADERS_BY_STATUS[401], request_id=scope[REQUEST_ID])
        return answer(refusal, scope, receive, send)
