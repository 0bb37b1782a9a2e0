"""Helpers shared by the endpoints."""

from __future__ import annotations

from fastapi import Response


def json_response(body: bytes) -> Response:
    return Response(content=body, media_type="application/json")
