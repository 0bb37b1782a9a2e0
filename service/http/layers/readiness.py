"""While artifacts load (one worker loads after its socket opens, ``runtime/lifecycle.
py``), the operations that need them (``operations.table``: ``needs_artifacts``) are
answered 503 ``not_ready`` (``reason: loading``) with ``Retry-After``; health, metrics,
the page and the docs are served. Once loaded this layer is one attribute test."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import response_for
from ...runtime.lifecycle import Lifecycle
from .answers import REQUEST_ID, answer


class Readiness:
    """``gated``: (exact paths, path prefixes) of the operations that need artifacts;
    ``renderers``: path -> its error shape, where it is not the contract's."""

    def __init__(self, app: ASGIApp, *, lifecycle: Lifecycle,
                 gated: tuple[frozenset[str], tuple[str, ...]],
                 renderers: Mapping[str, Callable[..., object]]) -> None:
        self.app = app
        self._lifecycle = lifecycle
        self._gated, self._gated_prefixes = gated
        self._renderers = renderers

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if not self._lifecycle.loaded:
            path = scope["path"]
            if path in self._gated or path.startswith(self._gated_prefixes):
                refusal = response_for(self._lifecycle.not_ready(1), path, scope[REQUEST_ID],
                                       self._renderers.get(path))
                return answer(refusal, scope, receive, send)
        return self.app(scope, receive, send)
