"""GET /metrics: Prometheus text format."""

from fastapi import Response

from ..deps import StateDep



async def metrics(state: StateDep) -> Response:
    cache, m = state.cache, state.metrics
    m.cache_entries.set(len(cache))
    m.cache_bytes.set(cache.bytes)
    return Response(content=m.render(), media_type=m.content_type)
