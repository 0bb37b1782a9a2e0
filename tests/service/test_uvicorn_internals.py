"""The uvicorn internals ``one_write.OneWriteProtocol`` relies on, checked on the installed
uvicorn, so that a uvicorn release that changes them fails here, by name, instead of
silently breaking the hot path's single write.

``pyproject.toml`` bounds uvicorn to the releases these tests ran on; the first test reads
that bound from the installed package's metadata (one home) and checks the installed
uvicorn is inside it.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import socket

import uvicorn
from packaging.requirements import Requirement
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from event_loops import run_in_fresh_thread

from tokserve.service.http.one_write import EXTENSION, HeldHeadTransport, OneWriteProtocol


def _uvicorn_requirement() -> Requirement:
    for line in importlib.metadata.requires("tokserve") or []:
        req = Requirement(line)
        if req.name == "uvicorn" and req.marker is None:
            return req
    raise AssertionError("tokserve's metadata does not require uvicorn")


def test_uvicorn_internals_installed_version_is_inside_the_tested_bound():
    req = _uvicorn_requirement()
    assert any(spec.operator == "<" for spec in req.specifier), (
        f"uvicorn is required as {req}: the hot path subclasses its internals, so the "
        "requirement must have an upper bound")
    assert req.specifier.contains(uvicorn.__version__), (uvicorn.__version__, str(req))


def test_uvicorn_internals_hooks_exist():
    for hook in ("connection_made", "on_message_begin", "on_headers_complete", "on_body",
                 "on_message_complete", "on_response_complete", "connection_lost",
                 "handle_websocket_upgrade"):
        assert callable(getattr(HttpToolsProtocol, hook, None)), (
            f"uvicorn {uvicorn.__version__}: HttpToolsProtocol.{hook} is gone; "
            "service/http/one_write.py and service/http/deadlines.py need updating")


async def _one_request() -> tuple[OneWriteProtocol, dict, bytes]:
    seen: dict = {}

    async def app(scope, receive, send):
        seen.update(scope)
        scope["extensions"][EXTENSION]()  # hold the head for the body
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    config = uvicorn.Config(app, http=OneWriteProtocol, lifespan="off", log_level="warning")
    config.load()
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_accepted_socket(
        lambda: OneWriteProtocol(config=config, server_state=ServerState(), app_state={}),
        ours)
    try:
        await loop.sock_sendall(theirs, b"GET /x HTTP/1.1\r\nhost: t\r\n\r\n")
        response = b""
        while not response.endswith(b"ok"):
            chunk = await asyncio.wait_for(loop.sock_recv(theirs, 4096), 10)
            assert chunk, "connection closed before the response"
            response += chunk
        return protocol, seen, response
    finally:
        transport.close()
        theirs.close()


def test_uvicorn_internals_protocol_writes_through_the_held_transport():
    """``connection_made`` stores the transport it is given (ours) as ``self.transport``,
    ``on_message_begin`` creates the request's scope (which we extend), and the request
    cycle writes through ``self.transport``: the response arrives whole through it."""
    protocol, scope, response = run_in_fresh_thread(_one_request)
    assert isinstance(protocol.transport, HeldHeadTransport), (
        f"uvicorn {uvicorn.__version__} no longer writes through the transport handed to "
        "connection_made")
    assert EXTENSION in scope.get("extensions", {}), (
        f"uvicorn {uvicorn.__version__} no longer builds the scope in on_message_begin")
    assert response.startswith(b"HTTP/1.1 200 ") and response.endswith(b"\r\n\r\nok")

