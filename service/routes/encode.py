"""POST /encode.

The operation itself is ``service.handlers.encode``;
this route gives it its OpenAPI entry.
"""

from fastapi import APIRouter, Request, Response

from .. import handlers
from ..deps import state_of
from ..schemas import EncodeRequest
from ._common import body_schema, json_response

router = APIRouter(tags=["tokenize"])


@router.post("/encode", openapi_extra=body_schema(EncodeRequest))
async def encode(request: Request) -> Response:
    """Text(s) → ids, with optional offsets and token strings."""
    return json_response(await handlers.encode(state_of(request), await request.body()))
