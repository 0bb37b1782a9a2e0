"""GET /healthz (alive) and GET /readyz (takes traffic); never behind auth.

/healthz is the startup and liveness probe: 503 until artifacts are loaded (``not_ready``
while they load, ``no_artifacts`` if none could be), then 200, draining included: a
draining process is alive and must not be restarted. /readyz is the readiness probe:
200 only when loaded, serving at least one tokenizer and not draining
(runtime/lifecycle.py).
"""

from fastapi import Request, Response

from ...errors import NoArtifacts, dumps
from ...runtime.state import state_of
from ._common import json_response


async def healthz(request: Request) -> Response:
    lifecycle, registry = request.app.state.lifecycle, state_of(request.app).registry
    if not lifecycle.loaded:
        raise lifecycle.not_ready(0)
    if len(registry) == 0:
        raise NoArtifacts("no tokenizer artifact is loaded",
                          refused=[str(f.path) for f in registry.failures])
    return json_response(dumps({"status": "ok", "tokenizers": len(registry)}))


async def readyz(request: Request) -> Response:
    registry = state_of(request.app).registry
    refusal = request.app.state.lifecycle.not_ready(len(registry))
    if refusal is not None:
        raise refusal
    return json_response(dumps({"status": "ready", "tokenizers": len(registry)}))
