"""POST /encode, /decode, /count, /render_chat: FastAPI's view of ``tokserve.service.handlers``.

The middleware dispatches these paths straight to the handlers; the routes here serve
the same handlers to anything that reaches FastAPI and give each its OpenAPI entry.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel

from .. import handlers
from ..deps import state_of
from ..schemas import CountRequest, DecodeRequest, EncodeRequest, RenderChatRequest
from ._common import body_schema, json_response

router = APIRouter()

#: path -> (request model, OpenAPI tag, summary)
_OPERATIONS: dict[str, tuple[type[BaseModel], str, str]] = {
    "/encode": (EncodeRequest, "tokenize", "Text(s) → ids, with optional offsets and tokens"),
    "/decode": (DecodeRequest, "tokenize", "Ids → text (or batch_ids → texts)"),
    "/count": (CountRequest, "tokenize",
               "Token count of text(s) or of a rendered chat; always len(ids) of /encode"),
    "/render_chat": (RenderChatRequest, "chat",
                     "Messages → the prompt text the template renders, its ids and mask"),
}


def _endpoint(handler: handlers.Handler):
    async def endpoint(request: Request) -> Response:
        return json_response(await handler(state_of(request), await request.body()))

    return endpoint


for _path, (_model, _tag, _summary) in _OPERATIONS.items():
    router.add_api_route(
        _path, _endpoint(handlers.BY_PATH[_path]), methods=["POST"], tags=[_tag],
        summary=_summary, name=_path.strip("/"), openapi_extra=body_schema(_model),
    )
