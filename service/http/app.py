"""The app factory: ``create_app(settings)`` builds a fresh, independent service.

Nothing is created at import time. The lifespan loads and verifies every artifact
version in a worker thread, so the loop is not blocked. By default the server accepts
its first request only once they are loaded; with ``load_in_background=True`` (what
``tokserve serve`` does with one worker) the socket opens at once and the load runs behind it: until it
ends /healthz and /readyz are 503 and every tokenizing operation answers 503
``not_ready`` (``lifecycle.Lifecycle``), so a probe or a load balancer can tell
"alive, still loading" from "dead".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi_offline import FastAPIOffline

from .. import __version__
from ..errors import NoTokenizers, install_error_handlers
from ..runtime.lifecycle import Lifecycle
from ..runtime.logs import AccessLog
from ..runtime.metrics import Metrics
from .middleware import ServiceMiddleware
from .openapi import build as build_openapi
from ..operations.table import DOCS_STATIC, install_routes
from ..runtime.reload import install_sighup
from ..runtime.state import ServiceState, build_state, load_artifacts
from ..runtime.settings import Settings, get_settings
from ..runtime.telemetry import Telemetry
from ..runtime.tracing import load as load_tracing

log = logging.getLogger("tokserve")


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
               load_in_background: bool = False) -> ServiceMiddleware:
    """A new app; ``settings`` defaults to the environment (``TOKSERVE_*``).

    The returned ASGI app is ``ServiceMiddleware`` around the FastAPI app (reachable as
    ``.app``): outside, not inside, FastAPI's own middleware stack, so the hot POST
    routes it dispatches directly skip that stack too. Its ``lifecycle`` says whether
    it is loading, ready or draining; ``telemetry`` batches finished requests to the
    metrics and the access log.
    """
    settings = settings or get_settings()
    metrics = Metrics()
    lifecycle = Lifecycle()
    telemetry = Telemetry([metrics.record_batch, AccessLog(settings.access_log)])
    tracing = load_tracing(settings.otel)
    state = build_state(settings, metrics, load=False,
                        state_class=tracing.state_class() if tracing is not None else ServiceState)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
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

    # /docs and /redoc with their assets served from the package (fastapi-offline ships
    # them): no CDN, so the page works on an offline or locked-down host.
    app = FastAPIOffline(
        title="tokserve",
        version=__version__,
        lifespan=lifespan,
        static_url=DOCS_STATIC,
        redirect_slashes=False,  # /encode/ is a 404, never a redirect that drops a POST
    )
    install_error_handlers(app)
    install_routes(app)
    for route in app.routes:  # HEAD wherever GET is (RFC 9110 §9.3.2), docs pages too
        if isinstance(route, APIRoute) and "GET" in route.methods:
            route.methods.add("HEAD")
    document = build_openapi(__version__, auth=settings.auth_token is not None,
                             admin=settings.admin_token is not None)
    app.openapi = lambda: document  # type: ignore[method-assign]
    app.state.service = state  # where ``state_of`` finds it (the one home of the state)
    app.state.lifecycle = lifecycle
    app.state.telemetry = telemetry
    return ServiceMiddleware(app, state, settings=settings, lifecycle=lifecycle,
                             telemetry=telemetry, tracing=tracing)


def app_from_env() -> ServiceMiddleware:
    """Factory for ``uvicorn --factory tokserve.service.http.app:app_from_env`` (artifacts load
    in the background, as under ``tokserve serve``; drain on SIGTERM needs the latter)."""
    return create_app(get_settings(), load_in_background=True)
