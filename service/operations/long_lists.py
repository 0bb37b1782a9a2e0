"""Long lists in a request body, validated with memory bounded by a chunk, not the list.

pydantic builds one error object per bad item of a list, and a ``ValidationError`` keeps
them all (each with a reference to its input): ``{"ids": ["x", ...]}`` with 10^6 items
(3.8 MiB of JSON) cost ~300 MiB that stayed with the worker, and 12.6 MiB on a compat
route peaked at 3.7 GB, holding the GIL for seconds while it did (issue 33).

So, before the model sees a body, each top-level list longer than ``LONG`` items is
checked alone against a *fail-fast* copy of its field's type (every ``list[...]`` in it
stops at its first bad item: O(1) memory whatever the body). Valid lists go on to the
model unchanged, which then finds no error in them. An invalid one is refused here: its
errors are counted chunk by chunk (``CHUNK`` items at a time, each chunk's errors dropped
before the next, the first ``listed`` kept with their positions made whole-list), so the
answer still lists the first errors and counts all of them, as the contract's envelope
says (``errors``, ``errors_total``). Between chunks the GIL is free for the event loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

#: Lists at most this long go to the model as they are (their errors are few anyway).
LONG = 256

#: Items validated at once when counting a long list's errors.
CHUNK = 4096


def long_list_errors(data: dict[str, Any], model: type[BaseModel], listed: int
                     ) -> tuple[list[dict[str, Any]], int] | None:
    """``(first errors, total)`` of the long lists in ``data`` that do not match their
    field, or None when every long list does. Errors are pydantic's dicts (``loc``,
    ``msg``, ``type``), locations from the body's top."""
    found: list[dict[str, Any]] = []
    total = 0
    for name, value in data.items():
        if type(value) is not list or len(value) <= LONG:
            continue
        info = model.model_fields.get(name)
        if info is None:
            continue
        strict, chunked = _adapters(model, name)
        try:
            strict.validate_python(value)
            continue
        except ValidationError as exc:
            fallback = exc.errors(include_url=False, include_context=False,
                                  include_input=False)
        count = 0
        for errors, n in _chunk_errors(chunked, value, listed - len(found)):
            found += [_located(e, name) for e in errors]
            count += n
        if count == 0:  # the whole is invalid though every chunk is valid (a union
            found += [_located(e, name) for e in fallback]  # taking both branches):
            count = len(fallback)  # the fail-fast errors are the answer
        total += count
    return (found[:listed], total) if total else None


def _chunk_errors(adapter: TypeAdapter, value: list[Any], wanted: int
                  ) -> Iterator[tuple[list[dict[str, Any]], int]]:
    for start in range(0, len(value), CHUNK):
        try:
            adapter.validate_python(value[start:start + CHUNK])
        except ValidationError as exc:
            n = exc.error_count()
            errors = []
            if wanted > 0:
                errors = [_shifted(e, start) for e in exc.errors(
                    include_url=False, include_context=False, include_input=False)[:wanted]]
                wanted -= len(errors)
            del exc
            yield errors, n


def _shifted(error: dict[str, Any], start: int) -> dict[str, Any]:
    """The chunk's error with its item index (the first int of its loc) made whole-list."""
    loc = list(error["loc"])
    for i, part in enumerate(loc):
        if type(part) is int:
            loc[i] = part + start
            break
    return {"loc": loc, "msg": error["msg"], "type": error["type"]}


def _located(error: dict[str, Any], name: str) -> dict[str, Any]:
    return {"loc": [name, *error["loc"]], "msg": error["msg"], "type": error["type"]}


@lru_cache(maxsize=None)
def _adapters(model: type[BaseModel], name: str) -> tuple[TypeAdapter, TypeAdapter]:
    """(the field's type with every list fail-fast, the field's type as it is)."""
    info = model.model_fields[name]
    annotation = Annotated[info.annotation, *info.metadata] if info.metadata \
        else info.annotation
    return TypeAdapter(_fail_fast(annotation)), TypeAdapter(annotation)


def _fail_fast(annotation: Any) -> Any:
    """``annotation`` with every ``list[...]`` in it stopping at its first bad item."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list and len(args) == 1:
        return Annotated[list[_fail_fast(args[0])], Field(fail_fast=True)]
    if origin in (Union, UnionType):
        return Union[tuple(_fail_fast(a) for a in args)]
    if origin is Annotated:
        return Annotated[_fail_fast(args[0]), *annotation.__metadata__]
    return annotation
