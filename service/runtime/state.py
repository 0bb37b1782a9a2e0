"""The service's state: what every request needs, built once per app, and the one way
to reach it.

``create_app`` builds a ``ServiceState`` (``build_state``, an empty registry and the
cache) before it builds anything else, hands it to the layers that serve requests
themselves (the fast lane), and keeps it on the framework app (``app.state.service``),
where ``state_of`` reads it for every route, WebSocket and streaming endpoint. The
state object lives as long as the app; the lifespan fills its registry
(``load_artifacts``) and hot reload changes it in place, so nothing ever holds a stale
one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel

from ..errors import NoTokenizers, TokenizerNotFound
from ..operations.parsing import parse_json
from .cache import ResultCache
from .metrics import Metrics
from .offload import in_thread
from .registry import Registry
from .settings import Settings

log = logging.getLogger("tokserve")

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

#: Bodies at least this large are parsed in a worker thread, one at a time. A parse holds
#: the GIL (orjson: about 0.3 s for 12 MB of small keys), so two at once gain nothing
#: while the loop waits for both; one at a time, the loop runs between them and a
#: concurrent /healthz waits for one parse at most. Below this a parse costs well under
#: a millisecond even for the worst shapes, less than the thread hop.
PARSE_OFFLOAD_BYTES = 256 * 1024


@dataclass
class ServiceState:
    """Everything a request needs; built once per app (``build_state``)."""

    settings: Settings
    registry: Registry
    cache: ResultCache
    metrics: Metrics
    _parse_lane: anyio.Lock | None = field(default=None, init=False, repr=False)

    async def parse(self, raw: bytes, model: type[M], unknown: str = "refuse") -> M:
        """``parsing.parse_json`` on the loop for small bodies; large ones in a worker
        thread through a one-at-a-time lane (see ``PARSE_OFFLOAD_BYTES``)."""
        if len(raw) < PARSE_OFFLOAD_BYTES:
            return parse_json(raw, model, unknown=unknown)
        if self._parse_lane is None:  # made on first use: it belongs to the running loop
            self._parse_lane = anyio.Lock()
        async with self._parse_lane:
            return await in_thread(lambda: parse_json(raw, model, unknown=unknown))

    async def run(self, work: Callable[[], T], size: int) -> T:
        """Run ``work`` inline when small, in a worker thread when ``size`` chars is large."""
        if size >= self.settings.thread_offload_chars:
            return await in_thread(work)
        return work()


def state_of(app: Any) -> ServiceState:
    """The ``ServiceState`` of ``app``, the framework app ``create_app`` put it on
    (``request.app``, ``websocket.app``, ``scope["app"]``): the one way to reach it."""
    return app.state.service


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
