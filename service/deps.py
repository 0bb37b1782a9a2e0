"""Request dependencies, as ``Annotated`` aliases, plus the one JSON body parser.

Routes read the body themselves (``parse_body``) instead of letting FastAPI do it:
orjson parses in one C pass, and pydantic validates the resulting dict in Rust. orjson
refuses lone-surrogate escapes (``"\\ud800"``), which JSON allows and clients send; for
those bodies only we fall back to the stdlib parser, which keeps them as lone surrogates
in ``str`` (the engine then encodes them as U+FFFD; see docs/SERVICE.md).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, TypeVar

import orjson
from fastapi import Depends, Request
from pydantic import BaseModel, ValidationError

from .errors import InvalidJson
from .serving import ServiceState

M = TypeVar("M", bound=BaseModel)
_LONG_DIGIT_RUN = re.compile(rb"\d{20}")  # 2**64 has 20 digits


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


async def parse_body(request: Request, model: type[M]) -> M:
    """Read, parse and validate the body as ``model``.

    Raises:
        PayloadTooLarge: (from the middleware's receive guard) the body is over the limit.
        InvalidJson: not JSON, or not a JSON object (422).
        pydantic.ValidationError: the object does not match the schema (422).
    """
    return parse_json(await request.body(), model)


def parse_json(raw: bytes, model: type[M]) -> M:
    """Parse and validate ``raw`` as ``model`` (the errors of ``parse_body``)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise InvalidJson(f"request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidJson(
            f"request body must be a JSON object, got {type(data).__name__}"
        )
    try:
        return model.model_validate(data)
    except ValidationError:
        # orjson turns integers beyond 64 bits into floats; an id like 2**70 must be
        # refused as an unknown id (400), not as "not an integer" (422). Re-parse exactly.
        if not _LONG_DIGIT_RUN.search(raw):
            raise
        return model.model_validate(json.loads(raw))
