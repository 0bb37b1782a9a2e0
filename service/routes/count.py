"""POST /count: text, texts, or a chat (messages) rendered then counted.

The operation itself is ``service.handlers.count``;
this route gives it its OpenAPI entry.
"""

from fastapi import APIRouter, Request, Response

from .. import handlers
from ..deps import state_of
from ..schemas import CountRequest
from ._common import body_schema, json_response

router = APIRouter(tags=["tokenize"])


@router.post("/count", openapi_extra=body_schema(CountRequest))
async def count(request: Request) -> Response:
    """Token count; always equal to len(ids) of /encode for the same request."""
    return json_response(await handlers.count(state_of(request), await request.body()))
