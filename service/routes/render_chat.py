"""POST /render_chat (the renderer itself lives in service.chat)."""

from fastapi import APIRouter, Request, Response

from ..deps import parse_body, state_of
from ..errors import dumps
from ..schemas import RenderChatRequest
from ..serving import render_chat as render
from ._common import body_schema, json_response

router = APIRouter(tags=["chat"])


@router.post("/render_chat", openapi_extra=body_schema(RenderChatRequest))
async def render_chat(request: Request) -> Response:
    """Messages → the prompt text the template renders, its ids and optional mask."""
    state = state_of(request)
    req = await parse_body(request, RenderChatRequest)
    entry = state.registry.resolve(req.tokenizer)
    # Templates are user-controlled Python-side work: always off the event loop.
    body = await state.run(lambda: render(state, entry, req), 1 << 62)
    return json_response(dumps(body))
