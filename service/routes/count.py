"""POST /count: text, texts, or a chat (messages) rendered then counted."""

from fastapi import APIRouter, Request, Response

from ..deps import parse_body, state_of
from ..errors import dumps
from ..schemas import CountRequest
from ..serving import check_encode_limits, count_texts, head_dict, render_chat
from ._common import body_schema, json_response

router = APIRouter(tags=["tokenize"])


@router.post("/count", openapi_extra=body_schema(CountRequest))
async def count(request: Request) -> Response:
    """Token count; always equal to len(ids) of /encode for the same request."""
    state = state_of(request)
    req = await parse_body(request, CountRequest)
    entry = state.registry.resolve(req.tokenizer)
    if req.messages is not None:
        body = await state.run(lambda: render_chat(state, entry, req, for_count=True), 1 << 62)
        return json_response(dumps(body))
    size = check_encode_limits(state, req)
    counts = await state.run(lambda: count_texts(state, entry, req), size)
    body = head_dict(entry)
    if req.text is not None:
        body["count"] = counts[0]
    else:
        body["counts"] = counts
        body["total"] = sum(counts)
    return json_response(dumps(body))
