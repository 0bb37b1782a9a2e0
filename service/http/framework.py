"""The framework app: FastAPI with a route for every operation of the table, the one
error mapping as its exception handlers, HEAD wherever GET is, and the OpenAPI document
built from the table (``openapi.py``), not from these routes.

The hot POST operations are served by the fast lane before the framework sees them
(``layers/fast_lane.py``); their routes here answer what reaches the framework anyway (a
wrong method is 405, with the methods the path takes). /docs and /redoc have their
assets served from the package (``routes/docs.py``): no CDN, so the pages work on an
offline or locked-down host.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.routing import APIRoute

from .. import __version__
from ..errors import install_error_handlers
from ..operations.handlers import Handler, Reply
from ..operations.table import DOCS_STATIC, OPERATIONS
from ..runtime.lifecycle import Lifecycle
from ..runtime.settings import Settings
from ..runtime.state import ServiceState, state_of
from ..runtime.telemetry import Telemetry
from .openapi import build as build_openapi
from .routes._common import json_response
from .routes.docs import install_docs


def build_framework(settings: Settings,
                    lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]], *,
                    service: ServiceState, lifecycle: Lifecycle,
                    telemetry: Telemetry) -> FastAPI:
    """The FastAPI app, with what its endpoints read on ``app.state``: the service's
    state (its one home: ``runtime.state.state_of`` reads it), the lifecycle (health
    probes) and the telemetry (flushed before a scrape)."""
    app = FastAPI(
        title="tokserve",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,  # the docs pages are routes/docs.py's
        redoc_url=None,
        redirect_slashes=False,  # /encode/ is a 404, never a redirect that drops a POST
    )
    install_error_handlers(app)
    install_routes(app)
    install_docs(app, openapi_url=app.openapi_url or "/openapi.json", static_url=DOCS_STATIC)
    for route in app.routes:  # HEAD wherever GET is (RFC 9110 §9.3.2), docs pages too
        if isinstance(route, APIRoute) and "GET" in route.methods:
            route.methods.add("HEAD")
    document = build_openapi(__version__, auth=settings.auth_token is not None,
                             admin=settings.admin_token is not None,
                             metrics=settings.metrics_bearer() is not None)
    app.openapi = lambda: document  # type: ignore[method-assign]
    app.state.service = service
    app.state.lifecycle = lifecycle
    app.state.telemetry = telemetry
    return app


def _body_endpoint(handler: Handler) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        # a path's parameters (a per-model compat base URL's name) go to the handler
        body = await handler(state_of(request.app), await request.body(),
                             **request.path_params)
        if isinstance(body, Reply):
            return Response(body.body, status_code=body.status, media_type="application/json",
                            headers={k.decode(): v.decode() for k, v in body.headers})
        return json_response(body)

    return endpoint


def install_routes(app: FastAPI) -> None:
    """Add the FastAPI route of every operation to ``app``, left out of FastAPI's own
    schema (the document is ``openapi.py``'s)."""
    for op in OPERATIONS:
        if op.asgi is not None:
            app.add_route(op.path, op.asgi, methods=[op.method], name=op.name,
                          include_in_schema=False)
            continue
        endpoint = _body_endpoint(op.handler) if op.handler is not None else op.endpoint
        app.add_api_route(op.path, endpoint, methods=[op.method], name=op.name,
                          include_in_schema=False)
        if op.websocket is not None:
            app.add_api_websocket_route(op.path, op.websocket, name=op.name + "_ws")
