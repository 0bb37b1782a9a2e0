"""POST /encode."""

from fastapi import APIRouter, Request, Response

from ..deps import parse_body, state_of
from ..schemas import EncodeRequest
from ..serving import check_encode_limits, encode_body
from ._common import body_schema, json_response

router = APIRouter(tags=["tokenize"])


@router.post("/encode", openapi_extra=body_schema(EncodeRequest))
async def encode(request: Request) -> Response:
    """Text(s) → ids, with optional offsets and token strings."""
    state = state_of(request)
    req = await parse_body(request, EncodeRequest)
    entry = state.registry.resolve(req.tokenizer)
    size = check_encode_limits(state, req)
    return json_response(await state.run(lambda: encode_body(state, entry, req), size))
