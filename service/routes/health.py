"""GET /healthz: 200 once artifacts are loaded (never behind auth)."""

from fastapi import Response

from ..deps import StateDep
from ..errors import dumps, error_response
from ._common import json_response



async def healthz(state: StateDep) -> Response:
    registry = state.registry
    if len(registry) == 0:
        return error_response(503, "no_artifacts", "no tokenizer artifact is loaded",
                              refused=[str(f.path) for f in registry.failures])
    return json_response(dumps({"status": "ok", "tokenizers": len(registry)}))
