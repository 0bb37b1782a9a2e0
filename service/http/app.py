"""The app factory and composition root: ``create_app(settings)`` builds a fresh,
independent service.

Here, and only here, the parts meet: the runtime (state, lifecycle, metrics, telemetry,
tracing), the framework app (``framework.py``) whose lifespan loads the artifacts, and
the layers in front of it (``layers/``), stacked in one list (``_layers``) the way
Starlette's ``Middleware(...)`` list is, and the WebSocket handshake checks.

Nothing is created at import time. The lifespan loads and verifies every artifact
version in a worker thread, so the loop is not blocked. By default the server accepts
its first request only once they are loaded; with ``load_in_background=True`` (what
``tokserve serve`` does with one worker) the socket opens at once and the load runs
behind it: until it ends /healthz and /readyz are 503 and every tokenizing operation
answers 503 ``not_ready`` (``runtime/lifecycle.py``), so a probe or a load balancer can
tell "alive, still loading" from "dead".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from anyio import to_thread
from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import NoTokenizers
from ..operations.table import (body_media_types, compat_routes, direct_handlers,
                                error_renderers, gated_paths, open_paths, websocket_paths)
from ..runtime.lifecycle import Lifecycle
from ..runtime.logs import AccessLog
from ..runtime.metrics import Metrics
from ..runtime.reload import install_sighup
from ..runtime.settings import Settings, get_settings
from ..runtime.state import ServiceState, build_state, load_artifacts
from ..runtime.telemetry import Telemetry
from ..runtime.tracing import Tracing
from ..runtime.tracing import load as load_tracing
from .framework import build_framework
from .layers.auth import BearerAuth
from .routes.metrics import PATH as METRICS_PATH
from .layers.body_limit import BodyLimit
from .layers.cors import Cors
from .layers.draining import Draining
from .layers.fast_lane import FastLane
from .layers.framework_answers import FrameworkAnswers
from .layers.last_resort import LastResort
from .layers.media_type import MediaType
from .layers.readiness import Readiness
from .layers.recording import Recording
from .layers.request_id import RequestId, RequestIds
from .layers.spans import Spans
from .layers.websocket_checks import WebSocketChecks

log = logging.getLogger("tokserve")


class Service:
    """The ASGI app ``create_app`` returns: HTTP requests go through the HTTP layers,
    WebSocket handshakes through their checks, both then to the framework app; lifespan
    events go to the framework app directly.

    ``app`` is the FastAPI app; ``lifecycle`` says whether the service is loading, ready
    or draining (the server runner drives it); ``telemetry`` batches finished requests to
    the metrics and the access log; ``tracing`` is None unless OpenTelemetry is on.
    """

    def __init__(self, http: ASGIApp, websocket: ASGIApp, app: FastAPI,
                 lifecycle: Lifecycle, telemetry: Telemetry, tracing: Tracing | None) -> None:
        self._http = http
        self._websocket = websocket
        self.app = app
        self.lifecycle = lifecycle
        self.telemetry = telemetry
        self.tracing = tracing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def _token(settings: Settings) -> bytes | None:
    return settings.auth_token.get_secret_value().encode() if settings.auth_token else None


def _layers(settings: Settings, ids: RequestIds, state: ServiceState, lifecycle: Lifecycle,
            telemetry: Telemetry, tracing: Tracing | None) -> list[Middleware]:
    """The HTTP layers in front of the framework app, outermost first
    (``layers/__init__.py`` says what each does). Layers a deployment does not use are
    left out, not switched off."""
    token = _token(settings)
    renderers = error_renderers()
    handlers = direct_handlers()
    stack = [
        Middleware(Cors, origins=settings.cors_origins) if settings.cors_origins else None,
        Middleware(RequestId, ids=ids),
        Middleware(Recording, telemetry=telemetry, direct=frozenset(handlers)),
        Middleware(Spans, tracing=tracing) if tracing is not None else None,
        Middleware(Draining, lifecycle=lifecycle),
        Middleware(BearerAuth, token=token, open_paths=open_paths(), renderers=renderers,
                   own={METRICS_PATH: settings.metrics_bearer()})
        if token is not None or settings.metrics_bearer() is not None else None,
        Middleware(BodyLimit, limit=settings.max_body_bytes, renderers=renderers),
        Middleware(MediaType, consumes=body_media_types(), renderers=renderers),
        Middleware(Readiness, lifecycle=lifecycle, gated=gated_paths(), renderers=renderers),
        Middleware(FastLane, handlers=handlers, state=state, limit=settings.max_body_bytes,
                   renderers=renderers, routes=compat_routes().find),
        Middleware(FrameworkAnswers),
        Middleware(LastResort),
    ]
    return [layer for layer in stack if layer is not None]


def _compose(app: ASGIApp, layers: list[Middleware]) -> ASGIApp:
    """``layers`` (outermost first) around ``app``, as Starlette builds its stack."""
    for cls, args, kwargs in reversed(layers):
        app = cls(app, *args, **kwargs)
    return app


async def _load(state: ServiceState, lifecycle: Lifecycle) -> None:
    """The background load: publish readiness when it ends, or report a fatal start."""
    try:
        await to_thread.run_sync(load_artifacts, state)
    except NoTokenizers as exc:
        lifecycle.fail(exc.message)
        return
    except Exception as exc:
        log.exception("loading artifacts failed")
        lifecycle.fail(f"loading artifacts failed: {exc!r}")
        return
    lifecycle.loaded = True


def create_app(settings: Settings | None = None, *,
               load_in_background: bool = False) -> Service:
    """A new app; ``settings`` defaults to the environment (``TOKSERVE_*``)."""
    settings = settings or get_settings()
    metrics = Metrics()
    lifecycle = Lifecycle()
    telemetry = Telemetry([metrics.record_batch, AccessLog(settings.access_log)])
    tracing = load_tracing(settings.otel)
    state = build_state(settings, metrics, load=False,
                        state_class=tracing.state_class() if tracing is not None else ServiceState)

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        loading: asyncio.Task | None = None
        if load_in_background:
            loading = asyncio.get_running_loop().create_task(_load(state, lifecycle))
        else:
            await to_thread.run_sync(load_artifacts, state)
            lifecycle.loaded = True
        uninstall_sighup = install_sighup(state, after=loading)
        try:
            yield
        finally:
            uninstall_sighup()
            telemetry.flush()
            metrics.close()
            if loading is not None and not loading.done():
                loading.cancel()  # the thread finishes on its own; nobody waits for it

    framework = build_framework(settings, lifespan, service=state, lifecycle=lifecycle,
                                telemetry=telemetry)
    ids = RequestIds()
    http = _compose(framework, _layers(settings, ids, state, lifecycle, telemetry, tracing))
    websocket = WebSocketChecks(framework, ids=ids, token=_token(settings),
                                origins=settings.cors_origins,
                                hosts=settings.allowed_hosts, lifecycle=lifecycle,
                                telemetry=telemetry, open_paths=open_paths()[0],
                                gated=gated_paths(), routes=websocket_paths())
    return Service(http, websocket, framework, lifecycle, telemetry, tracing)


def app_from_env() -> Service:
    """Factory for ``uvicorn --factory tokserve.service.http.app:app_from_env``
    (artifacts load in the background, as under ``tokserve serve``; drain on SIGTERM
    needs the latter)."""
    return create_app(get_settings(), load_in_background=True)
