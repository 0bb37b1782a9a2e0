"""GET /decode/stream without an Upgrade: the route is a WebSocket
(operations/streaming.py)."""

from fastapi import Request, Response

from ...errors import error_response


async def upgrade_required(request: Request) -> Response:
    """426: a plain GET of the WebSocket route, with what to do instead."""
    return error_response(
        426, "upgrade_required",
        "/decode/stream is a WebSocket: connect with 'Connection: Upgrade' and 'Upgrade: "
        "websocket' (or POST newline-delimited JSON to /decode/stream)",
        {"Upgrade": "websocket", "Connection": "Upgrade"},
        request_id=request.scope.get("tokserve.request_id"))
