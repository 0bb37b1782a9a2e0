"""The app factory: ``create_app(settings)`` builds a fresh, independent service.

Nothing is created at import time. The lifespan loads and verifies every artifact
version before the server accepts its first request (so /healthz is 200 only once they
are loaded), in a worker thread so the loop is not blocked.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import FastAPI

from . import __version__
from .cache import ResultCache
from .errors import NoTokenizers, TokenizerNotFound, install_error_handlers
from .metrics import Metrics
from .middleware import ServiceMiddleware
from .registry import Registry
from .reload import install_sighup
from .routes import ROUTERS
from .serving import ServiceState
from .settings import Settings, get_settings

log = logging.getLogger("tokserve")


def build_state(settings: Settings, metrics: Metrics | None = None) -> ServiceState:
    """Load the registry and build the cache (blocking; also used by the CLI)."""
    metrics = metrics or Metrics()
    registry = Registry(default=settings.default_tokenizer, tables=settings.tables_dir)
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
    cache = ResultCache(settings.cache_max_entries, settings.cache_max_bytes,
                        settings.cache_max_text_chars)
    cache.on_hit = metrics.cache_hits.inc
    cache.on_miss = metrics.cache_misses.inc
    return ServiceState(settings=settings, registry=registry, cache=cache, metrics=metrics)


def create_app(settings: Settings | None = None) -> ServiceMiddleware:
    """A new app; ``settings`` defaults to the environment (``TOKSERVE_*``).

    The returned ASGI app is ``ServiceMiddleware`` around the FastAPI app (reachable as
    ``.app``): outside, not inside, FastAPI's own middleware stack, so the hot POST
    routes it dispatches directly skip that stack too.
    """
    settings = settings or get_settings()
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = await to_thread.run_sync(build_state, settings, metrics)
        app.state.service = state
        log.info("serving %d tokenizer version(s): %s; default %s", len(state.registry),
                 ", ".join(state.registry.refs()), settings.default_tokenizer)
        uninstall_sighup = install_sighup(state)
        try:
            yield
        finally:
            uninstall_sighup()

    app = FastAPI(
        title="tokserve",
        version=__version__,
        summary="Exact byte-level BPE tokenization over versioned artifacts.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    return ServiceMiddleware(app, settings=settings, metrics=metrics)


def app_from_env() -> ServiceMiddleware:
    """Factory for ``uvicorn --factory tokserve.service.app:app_from_env`` (multi-worker serving)."""
    return create_app(get_settings())
