"""Every request gets an id: the caller's ``X-Request-ID`` when it is a short token
(so it can go into logs and headers as it is), else a fresh one. It is echoed in the
response's ``X-Request-ID`` and in every error body, and written to the access line."""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable
from itertools import count

from starlette.types import ASGIApp, Receive, Scope, Send

from .answers import REQUEST_ID

#: A caller's X-Request-ID is kept when it is a short token of these characters.
_TOKEN = re.compile(rb"[A-Za-z0-9._:/+=@-]{1,128}")


class RequestIds:
    """Fresh request ids: a random per-process prefix and a counter (unique across
    workers and restarts; no system call per request, as ``uuid4`` makes)."""

    def __init__(self) -> None:
        self._prefix = os.urandom(6).hex()
        self._next = count(1).__next__

    def __call__(self) -> str:
        return f"{self._prefix}-{self._next():x}"


def request_id(value: bytes | None, fresh: RequestIds) -> str:
    """The id of a request whose ``X-Request-ID`` is ``value``."""
    return value.decode() if value is not None and _TOKEN.fullmatch(value) else fresh()


class RequestId:
    """Puts the request's id in the scope (``answers.REQUEST_ID``)."""

    def __init__(self, app: ASGIApp, *, ids: RequestIds) -> None:
        self.app = app
        self._ids = ids

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        value = None
        for key, val in scope["headers"]:  # answers.header and request_id(), inline
            if key == b"x-request-id":
                value = val
        scope[REQUEST_ID] = value.decode() if value is not None and _TOKEN.fullmatch(value) \
            else self._ids()
        return self.app(scope, receive, send)
