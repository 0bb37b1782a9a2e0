"""Request dependencies, as ``Annotated`` aliases.

The hot POST routes read and parse their bodies themselves (``ServiceState.parse``,
``parsing.parse_json``); what is left here is how an endpoint reaches the state the
lifespan built.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from ..operations.encode import ServiceState


def state_of(request: Request) -> ServiceState:
    """The ``ServiceState`` the lifespan placed on ``app.state``.

    Hot POST routes call this directly instead of declaring a dependency: FastAPI runs
    sync dependencies in the thread pool, a hop that cost more than a 1 KB count.
    """
    return request.app.state.service


async def get_state(request: Request) -> ServiceState:
    """Dependency form of ``state_of`` (async, so it runs on the loop, not in a thread)."""
    return request.app.state.service


StateDep = Annotated[ServiceState, Depends(get_state)]
