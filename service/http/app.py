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
from ..runtime.cache import ResultCache
from ..errors import NoTokenizers, TokenizerNotFound, install_error_handlers
from ..runtime.lifecycle import Lifecycle
from ..runtime.logs import AccessLog
from ..runtime.metrics import Metrics
from .middleware import ServiceMiddleware
from ..runtime.registry import Registry
from .openapi import build as build_openapi
from ..operations.table import DOCS_STATIC, install_routes
from ..runtime.reload import install_sighup
from ..operations.encode import ServiceState
from ..runtime.settings import Settings, get_settings
from ..runtime.telemetry import Telemetry
from ..runtime.tracing import load as load_tracing

log = logging.getLogger("tokserve")


def build_state(settings: Settings, metrics: Metrics | None = None, *,
                load: bool = True, state_class: type[ServiceState] = ServiceState
                ) -> ServiceState:
    """The service's state: an empty registry and the cache; ``load`` (blocking) fills
    the registry from the artifact roots (``load_artifacts``)."""
    metrics = metrics or Metrics()
    registry = Registry(default=settings.default_tokenizer, tables=settings.tables_dir)
    cache = ResultCache(settings.cache_max_entries, settings.cache_max_bytes,
                        settings.cache_max_text_chars)
    metrics.watch(cache)
    state = state_class(settings=settings, registry=registry, cache=cache, metrics=metrics)
    if load:
        load_artifacts(state)
    return state


def load_artifacts(state: ServiceState) -> None:
    """Load and verify every version under the artifact roots (blocking).

    Raises:
        NoTokenizers: nothing loaded and ``allow_empty`` is off.
    """
    settings, registry, metrics = state.settings, state.registry, state.metrics
    registry.load_roots(settings.artifact_roots())
    metrics.set_artifacts(registry.entries())
    if registry.failures:
        metrics.artifact_failures.inc(len(registry.failures))
    if not len(registry) and not settings.allow_empty:
        refused = "; ".join(f"{f.path}: {f.reason}" for f in registry.failures)
        raise NoTokenizers(
            f"no tokenizer could be loaded from {settings.describe_roots()}"
            + (f" (refused: {refused})" if refused else "")
            + "; add artifacts with --artifacts DIR, or pass --allow-empty to start anyway"
        )
    if len(registry) and settings.default_tokenizer:
        try:
            registry.resolve(None)
        except TokenizerNotFound:
            log.warning("default tokenizer %r is not loaded; requests must name one "
                        "(loaded: %s)", settings.default_tokenizer, ", ".join(registry.refs()))
    log.info("serving %d tokenizer version(s): %s; default %s", len(registry),
             ", ".join(registry.refs()), settings.default_tokenizer)


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
    state_class = tracing.state_class() if tracing is not None else ServiceState

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loading: asyncio.Task | None = None
        if load_in_background:
            state = build_state(settings, metrics, load=False, state_class=state_class)
            loading = asyncio.get_running_loop().create_task(_load(state, lifecycle))
        else:
            state = await to_thread.run_sync(
                lambda: build_state(settings, metrics, state_class=state_class))
            lifecycle.loaded = True
        app.state.service = front.service = state  # the fast lane reads its own attribute
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
    app.state.lifecycle = lifecycle
    app.state.telemetry = telemetry
    front = ServiceMiddleware(app, settings=settings, lifecycle=lifecycle, telemetry=telemetry,
                              tracing=tracing)
    return front


def app_from_env() -> ServiceMiddleware:
    """Factory for ``uvicorn --factory tokserve.service.http.app:app_from_env`` (artifacts load
    in the background, as under ``tokserve serve``; drain on SIGTERM needs the latter)."""
    return create_app(get_settings(), load_in_background=True)
