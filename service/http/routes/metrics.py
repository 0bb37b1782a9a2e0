"""GET /metrics: Prometheus text format, every worker's series (runtime/metrics.py)."""

from fastapi import Request, Response

from ...runtime.state import state_of

#: This route's path (the operation table's ``metrics`` row): auth gives it its own token
#: rule (``Settings.metrics_bearer``).
PATH = "/metrics"


async def metrics(request: Request) -> Response:
    request.app.state.telemetry.flush()  # this worker's requests of this loop turn
    m = state_of(request.app).metrics
    return Response(content=m.render(), media_type=m.content_type)
