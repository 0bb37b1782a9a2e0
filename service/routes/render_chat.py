"""POST /render_chat (the renderer itself lives in service.chat).

The operation itself is ``service.handlers.render_chat``;
this route gives it its OpenAPI entry.
"""

from fastapi import APIRouter, Request, Response

from .. import handlers
from ..deps import state_of
from ..schemas import RenderChatRequest
from ._common import body_schema, json_response

router = APIRouter(tags=["chat"])


@router.post("/render_chat", openapi_extra=body_schema(RenderChatRequest))
async def render_chat(request: Request) -> Response:
    """Messages → the prompt text the template renders, its ids and optional mask."""
    return json_response(await handlers.render_chat(state_of(request), await request.body()))
