"""POST /decode.

The operation itself is ``service.handlers.decode``;
this route gives it its OpenAPI entry.
"""

from fastapi import APIRouter, Request, Response

from .. import handlers
from ..deps import state_of
from ..schemas import DecodeRequest
from ._common import body_schema, json_response

router = APIRouter(tags=["tokenize"])


@router.post("/decode", openapi_extra=body_schema(DecodeRequest))
async def decode(request: Request) -> Response:
    """Ids → text (or batch_ids → texts)."""
    return json_response(await handlers.decode(state_of(request), await request.body()))
