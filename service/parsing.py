"""The one JSON body parser: raw bytes -> a validated request model, with bounded work.

The hot routes read their bodies themselves: orjson parses in one C pass and pydantic
validates the resulting dict in Rust. Before the validator sees anything, the work is
bounded, because a body is attacker-sized input:

* UTF-8 only: a BOM or a UTF-16/32 body is refused (422 ``invalid_json``), never guessed
  (RFC 8259 §8.1: JSON exchanged between systems is UTF-8).
* Unknown top-level keys are refused by one set difference. A 12 MB body of a million
  unknown keys then costs one parse (about 0.3 s) instead of a million validation errors
  (about 4 s); the errors listed are capped at ``MAX_LISTED``, with their total.
* Nesting: orjson stops at depth 1024 on its own; the free-form fields a template walks
  recursively (``messages``, ``tools``, ``template_kwargs``) are held to ``MAX_DEPTH``.
  Typed fields (``text``, ``ids``...) need no walk: their schema refuses a nested value at
  its first level. Either way the answer is 422, never a ``RecursionError``.

orjson refuses lone-surrogate escapes (``"\\ud800"``), which JSON allows and clients
send; for those bodies only the stdlib parser runs, keeping them as lone surrogates in
``str`` (the engine then encodes them as U+FFFD; see docs/SERVICE.md).

Where the parse runs (on the event loop or in a worker thread) is ``ServiceState.parse``'s
decision, not this module's: everything here is plain blocking code.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from .errors import InvalidJson, InvalidRequest, shorten

M = TypeVar("M", bound=BaseModel)

#: Deepest nesting of the free-form fields (documented in docs/API.md). Real requests
#: need a handful of levels (tool-call arguments a few more); deeper structures only exist
#: to exhaust a recursive parser, validator or template filter.
MAX_DEPTH = 64

#: Fields whose values are arbitrary JSON handed to a template (walked for depth).
FREE_FORM = ("messages", "tools", "template_kwargs")

#: How many unknown keys an error lists (``errors_total`` gives the count).
MAX_LISTED = 20

#: orjson reads integers in [-2**63, 2**64) exactly and others as floats; -2**63 has 19
#: digits, so any integer it may have turned into a float has a run of 19 or more.
_LONG_DIGIT_RUN = re.compile(rb"\d{19}")


def parse_json(raw: bytes, model: type[M]) -> M:
    """Parse and validate ``raw`` as ``model``.

    Raises:
        InvalidJson: not UTF-8 JSON, or not a JSON object (422 ``invalid_json``).
        InvalidRequest: unknown fields, or nesting deeper than ``MAX_DEPTH`` (422).
        pydantic.ValidationError: the object does not match the schema (422).
    """
    data = _loads(raw)
    if not isinstance(data, dict):
        raise InvalidJson(f"request body must be a JSON object, got {type(data).__name__}")
    fields = model.model_fields
    if len(data) > len(data.keys() & fields.keys()):
        raise _unknown_fields(data, model)
    for name in FREE_FORM:
        value = data.get(name)
        # the body is level 1 and the field's value level 2
        if isinstance(value, (dict, list)) and _depth_over(value, MAX_DEPTH - 2):
            raise InvalidRequest(
                f"`{name}` is nested deeper than {MAX_DEPTH} levels", field=name,
                limit=MAX_DEPTH)
    try:
        return model.model_validate(data)
    except ValidationError:
        # orjson turns integers beyond 64 bits into floats; an id like 2**70 or -10**19
        # must be refused as an unknown id (400), not as "not an integer" (422).
        # Re-parse exactly.
        if not _LONG_DIGIT_RUN.search(raw):
            raise
        return model.model_validate(json.loads(raw.decode("utf-8")))


def _loads(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc) or "recursion" in str(exc):
            raise _too_deep() from None
        try:
            # orjson refuses lone-surrogate escapes, which JSON allows; the stdlib keeps
            # them. Decoding as UTF-8 first means a BOM or UTF-16 body is refused here.
            return json.loads(raw.decode("utf-8"))
        except RecursionError:
            raise _too_deep() from None
        except (ValueError, UnicodeDecodeError):
            raise InvalidJson(f"request body is not valid UTF-8 JSON: {shorten(str(exc))}"
                              ) from None


def _too_deep() -> InvalidRequest:
    return InvalidRequest(f"request body is nested deeper than {MAX_DEPTH} levels",
                          limit=MAX_DEPTH)


def _unknown_fields(data: dict[str, Any], model: type[BaseModel]) -> InvalidRequest:
    """The 422 pydantic would give for ``extra="forbid"``, in the same ``errors`` shape,
    without building one error object per key: the first ``MAX_LISTED`` unknown keys in
    body order, and their total (no sort: a million keys would take half a second)."""
    fields = model.model_fields
    total = len(data) - len(data.keys() & fields.keys())
    listed: list[str] = []
    for key in data:
        if key not in fields:
            listed.append(key)
            if len(listed) == MAX_LISTED:
                break
    names = ", ".join(repr(shorten(k, 64)) for k in listed[:5])
    more = f" (and {total - 5} more)" if total > 5 else ""
    return InvalidRequest(
        f"unknown field(s) {names}{more}; allowed: {', '.join(fields)}",
        errors=[{"loc": [shorten(k, 64)], "msg": "Extra inputs are not permitted",
                 "type": "extra_forbidden"} for k in listed],
        errors_total=total,
    )


def _depth_over(value: dict | list, limit: int) -> bool:
    """Whether ``value`` nests containers more than ``limit`` levels below itself.

    Iterative (no recursion to exhaust); only containers are pushed, so long strings and
    numbers cost one ``isinstance`` each.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        for item in node.values() if isinstance(node, dict) else node:
            if isinstance(item, (dict, list)):
                if depth + 1 > limit:
                    return True
                stack.append((item, depth + 1))
    return False
