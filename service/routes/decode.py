"""POST /decode."""

from fastapi import APIRouter, Request, Response

from ..deps import parse_body, state_of
from ..schemas import DecodeRequest
from ..serving import check_decode_limits, decode_body
from ._common import body_schema, json_response

router = APIRouter(tags=["tokenize"])


@router.post("/decode", openapi_extra=body_schema(DecodeRequest))
async def decode(request: Request) -> Response:
    """Ids → text (or batch_ids → texts)."""
    state = state_of(request)
    req = await parse_body(request, DecodeRequest)
    entry = state.registry.resolve(req.tokenizer)
    size = check_decode_limits(state, req)
    return json_response(await state.run(lambda: decode_body(state, entry, req), size))
