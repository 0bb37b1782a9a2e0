"""Helpers shared by the routers (response class, OpenAPI body schemas)."""

from __future__ import annotations

from typing import Any

from fastapi import Response
from pydantic import BaseModel


def json_response(body: bytes) -> Response:
    return Response(content=body, media_type="application/json")


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` documenting a body the route parses itself (see deps.parse_body)."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": model.model_json_schema(
                ref_template="#/components/schemas/{model}")}},
        }
    }
