"""Telemetry's side of a request: a ``RequestRecord`` made when it arrives and handed
to the metrics and the access log when it ends (``runtime/telemetry.py``).

The record is the scope's (``answers.RECORD``) and the task's (``telemetry.current``,
through which the operation adds its tokenizer and the tokens it counted). The layers
and the fast lane fill in status, sizes and route as they answer. A client that goes
away in the middle of its body leaves a 499: nobody is left to answer.
"""

from __future__ import annotations

import time
from collections.abc import Collection

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from ...runtime.telemetry import RequestRecord, Telemetry, current
from .answers import RECORD, REQUEST_ID


class Recording:
    """One ``RequestRecord`` per HTTP request, finished into ``telemetry``.

    ``direct`` are the fast lane's paths: a POST to one of them is labelled with its
    path from the start, so a refusal before the fast lane is counted under its route
    (every other request gets its route template from the framework's routing)."""

    def __init__(self, app: ASGIApp, *, telemetry: Telemetry, direct: Collection[str]) -> None:
        self.app = app
        self._telemetry = telemetry
        self._direct = direct

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = time.perf_counter()
        method = scope["method"]
        record = RequestRecord(scope[REQUEST_ID], method, start)
        scope[RECORD] = record
        current.set(record)  # this task's context: the operation fills in its tokens
        if method == "POST" and scope["path"] in self._direct:
            record.route = scope["path"]
        try:
            await self.app(scope, receive, send)
        except ClientDisconnect:
            record.status = 499  # the client went away mid-body: nobody to answer
        finally:
            record.duration = time.perf_counter() - start
            self._telemetry.finish(record)
