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
* Integers (``ids``, ``batch_ids``, ``max_tokens``) are checked here first, at C speed on
  the usual all-integers body: JSON (and the OpenAPI schema) calls ``5.0`` an integer, so
  integral numbers become ints, while strings, booleans and fractions are refused with
  the first ``MAX_LISTED`` positions and their total. The validator would otherwise build
  one error per bad item: 4 million of them took 1.3 s to find and 15 s to list.
* Any other list longer than a few hundred items is checked before the model sees it,
  fail-fast, and its errors, if any, counted a chunk at a time (``long_lists.py``): memory
  stays a small multiple of the body, and nothing of a refused body outlives its answer.

orjson refuses lone-surrogate escapes (``"\\ud800"``), which JSON allows and clients
send; for those bodies only the stdlib parser runs, keeping them as lone surrogates in
``str`` (the engine then encodes them as U+FFFD; see docs/SERVICE.md).

Most calls are a string and a few options (``{"text": "..."}``), and for those pydantic's
validation of a model of twenty fields with a Python rule was most of the parse (and a
tenth of a whole cold 1 KB /count). A model that opts in (``quick_parse``: the
contract's request models) takes such a body without the validator: when every key is
a field whose check is a type or a literal (a free ``str``, a strict ``bool``, a string
``Literal``), the body is valid exactly when a *representative* of its shape is (the same
keys, the same flags and literals, each free string replaced by ``"x"``), and pydantic
decides that once per shape (``_Quick``). The request is then a ``Prevalidated`` view:
the body's values over the model's defaults. This rests on one rule of the opted-in
models, stated in schemas.py: their rules look at which fields are given and at flags
and literals, never at a free string's content. tests/service/test_parsing.py compares
both ways on generated bodies (right and wrong values of every field) of every model
that opts in.

Where the parse runs (on the event loop or in a worker thread) is ``ServiceState.parse``'s
decision, not this module's: everything here is plain blocking code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import compress, repeat
from operator import is_
from types import UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import orjson
from pydantic import BaseModel, Strict, ValidationError

from ..errors import InvalidJson, InvalidRequest, shorten
from .long_lists import long_list_errors

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


def parse_json(raw: bytes, model: type[M], *, unknown: str = "refuse") -> M:
    """Parse and validate ``raw`` as ``model``. ``unknown="ignore"`` drops fields the
    model does not have instead of refusing them (the compat routes: the projects they
    imitate ignore unknown fields). A plain body of a model that opts in comes back as a
    ``Prevalidated`` view with the model's attributes, not as a model instance.

    Raises:
        InvalidJson: not UTF-8 JSON, or not a JSON object (422 ``invalid_json``).
        InvalidRequest: unknown fields, nesting deeper than ``MAX_DEPTH``, or anything
            else that does not match the schema (422, with ``errors`` and ``errors_total``).
    """
    data = _loads(raw)
    if not isinstance(data, dict):
        raise InvalidJson(f"request body must be a JSON object, got {type(data).__name__}")
    quick = _QUICK.get(model)
    if quick is None:
        quick = _QUICK[model] = _Quick(model)
    if quick.view is not None:
        view = quick.accept(data)
        if view is not None:
            return view  # type: ignore[return-value] - the model's attributes (Prevalidated)
    fields = model.model_fields
    if len(data) > len(data.keys() & fields.keys()):
        if unknown != "ignore":
            raise _unknown_fields(data, model)
        data = {k: v for k, v in data.items() if k in fields}
    for name in FREE_FORM:
        value = data.get(name)
        # the body is level 1 and the field's value level 2
        if isinstance(value, (dict, list)) and _depth_over(value, MAX_DEPTH - 2):
            raise InvalidRequest(
                f"`{name}` is nested deeper than {MAX_DEPTH} levels", field=name,
                limit=MAX_DEPTH)
    odd = {n: d for n, d in _integer_fields(model).items()
           if n in data and not _all_integers(data[n], d)}
    if odd:
        if any(_has_floats(data[n], d) for n, d in odd.items()) and \
                _LONG_DIGIT_RUN.search(raw):
            # orjson turns integers beyond 64 bits into floats; an id like 2**70 or
            # -10**19 must be refused as that unknown id (400), not as a rounded one.
            data = json.loads(raw.decode("utf-8"))
        for name, depth in odd.items():
            data[name] = _as_integers(data[name], depth, name)
    bad = long_list_errors(data, model, MAX_LISTED)
    if bad is not None:
        raise _refusal(*bad)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        total = exc.error_count()
        errors = exc.errors(include_url=False, include_context=False, include_input=False) \
            if total <= 10 * MAX_LISTED else None
        del exc  # its line errors hold the input: never past this frame (issue 33)
    raise _refusal(errors if errors is not None else _sample_errors(data, model), total)


def _refusal(errors: list[dict[str, Any]], total: int) -> InvalidRequest:
    """The 422 for a validation failure, bounded: ``errors`` are the first ones (at most
    ``MAX_LISTED`` are listed), ``total`` counts all. ``exc.errors()`` materializes every
    error, and a list of a million wrong items has a million (minutes to list): with that
    many, the caller passes those of the same body with every list cut to its first items
    (``_sample_errors``)."""
    details = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
               for e in errors[:MAX_LISTED]]
    if details:
        first = details[0]
        where = ".".join(shorten(str(p), 64) for p in first["loc"]) or "body"
        message = f"invalid request at {where}: {first['msg']}"
    else:
        message = "request does not match the schema"
    more = f" (and {total - 1} more)" if total > 1 else ""
    return InvalidRequest(message + more, errors=details, errors_total=total)


def _sample_errors(data: dict[str, Any], model: type[BaseModel]) -> list[dict[str, Any]]:
    try:
        model.model_validate(_cut_lists(data, 10 * MAX_LISTED))
    except ValidationError as exc:
        return exc.errors(include_url=False, include_context=False, include_input=False)
    return []


def _cut_lists(value: Any, limit: int) -> Any:
    if isinstance(value, list):
        return [_cut_lists(v, limit) for v in value[:limit]]
    if isinstance(value, dict):
        return {k: _cut_lists(v, limit) for k, v in value.items()}
    return value


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


@lru_cache(maxsize=None)
def _integer_fields(model: type[BaseModel]) -> dict[str, int]:
    """``{field: depth}`` for the model's strict-integer fields: 0 an integer, 1 a list
    of them, 2 a list of lists (read from the annotations, so the schema is the one
    home of which fields are integers)."""
    out = {}
    for name, info in model.model_fields.items():
        depth = _integer_depth(info.annotation, info.metadata)
        if depth is not None:
            out[name] = depth
    return out


def _integer_depth(annotation: Any, metadata: Sequence[Any] = ()) -> int | None:
    args = [a for a in get_args(annotation) if a is not type(None)]
    origin = get_origin(annotation)
    if origin in (Union, UnionType) and len(args) == 1:
        return _integer_depth(args[0])
    if origin is list and len(args) == 1:
        inner = _integer_depth(args[0])
        return None if inner is None else inner + 1
    if origin is Annotated and args and args[0] is int:
        return 0 if any(isinstance(m, Strict) for m in get_args(annotation)[1:]) else None
    if annotation is int and any(isinstance(m, Strict) for m in metadata):
        return 0
    return None


def _all_integers(value: Any, depth: int) -> bool:
    """Whether ``value`` is already what an integer field of ``depth`` holds (the usual
    body: one C-level pass over the types)."""
    if depth == 0:
        return type(value) is int
    if type(value) is not list:
        return False
    if depth == 1:
        return set(map(type, value)) <= {int}
    return all(type(row) is list and set(map(type, row)) <= {int} for row in value)


def _has_floats(value: Any, depth: int) -> bool:
    if depth == 0 or not isinstance(value, list):
        return type(value) is float
    if depth == 1:
        return float in set(map(type, value))
    return any(_has_floats(row, 1) for row in value)


def _as_integers(value: Any, depth: int, name: str) -> Any:
    """``value`` with integral floats as ints; raises InvalidRequest listing the first
    items that are not integers (and counting all of them). Values of another shape are
    left for the validator to refuse (one error each). Every pass over a list is a C-level
    ``map``/``count``/``index``, so a 16 MB body of bad ids costs tenths of a second."""
    if depth == 0:
        return int(value) if type(value) is float and value.is_integer() else value
    if not isinstance(value, list):
        return value
    rows = [value] if depth == 1 else value
    if depth == 2 and not all(isinstance(row, list) for row in rows):
        return value
    bad: list[list[Any]] = []
    total = 0
    fixed_rows = []
    for r, row in enumerate(rows):
        fixed, positions, n_bad = _integral_row(row)
        fixed_rows.append(fixed)
        total += n_bad
        for i in positions[:MAX_LISTED - len(bad)]:
            bad.append([name, i] if depth == 1 else [name, r, i])
    if total:
        where = ".".join(map(str, bad[0]))
        more = f" (and {total - 1} more)" if total > 1 else ""
        raise InvalidRequest(
            f"invalid request at {where}: Input should be a valid integer{more}",
            errors=[{"loc": loc, "msg": "Input should be a valid integer",
                     "type": "int_type"} for loc in bad],
            errors_total=total)
    return fixed_rows[0] if depth == 1 else fixed_rows


def _integral_row(row: list[Any]) -> tuple[list[Any], list[int], int]:
    """``(row as ints, first positions of non-integers, how many there are)``."""
    types = list(map(type, row))
    ints = types.count(int)
    if ints == len(row):
        return row, [], 0
    float_at = list(compress(range(len(row)), map(is_, types, repeat(float))))
    integral = list(map(float.is_integer, map(row.__getitem__, float_at)))
    n_bad = len(row) - ints - integral.count(True)
    if not n_bad:
        return list(map(int, row)), [], 0
    positions: list[int] = []  # the first MAX_LISTED of each kind: enough for the first overall
    for kind in set(types) - {int, float}:  # strings, booleans, null, lists, objects
        at = -1
        for _ in range(MAX_LISTED):
            try:
                at = types.index(kind, at + 1)
            except ValueError:
                break
            positions.append(at)
    k = -1
    for _ in range(MAX_LISTED):  # fractions
        try:
            k = integral.index(False, k + 1)
        except ValueError:
            break
        positions.append(float_at[k])
    return row, sorted(positions)[:MAX_LISTED], n_bad


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


# ==== bodies valid by construction ======================================================


class Prevalidated:
    """A request accepted without the validator (see the module docstring): the body's
    values as attributes, over class attributes holding the model's defaults. It answers
    what the handlers read of a request: its fields and ``model_fields_set``."""

    model: type[BaseModel]  # the request model this view stands for (set per subclass)

    @property
    def model_fields_set(self) -> set[str]:
        return set(self.__dict__)

    def __repr__(self) -> str:
        return f"{self.model.__name__}~{self.__dict__!r}"


_ANY_STR = object()  # a field that takes any string
_QUICK: dict[type[BaseModel], _Quick] = {}
_MAX_SHAPES = 512  # verdicts kept per model (the shapes callers send are a handful)


class _Quick:
    """For one model: which fields a body may use to skip the validator, what each
    accepts, and the validator's verdict per body shape."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
        self.view: type[Prevalidated] | None = None
        self.accepts: dict[str, tuple[Any, bool]] = {}  # field -> (_ANY_STR | values, nullable)
        self.shapes: dict[tuple[Any, ...], bool] = {}
        if not getattr(model, "quick_parse", False):
            return
        decorators = model.__pydantic_decorators__
        checked = {f for d in decorators.field_validators.values() for f in d.info.fields}
        if any(d.info.mode != "after" for d in decorators.model_validators.values()) or \
                "*" in checked:
            return  # a rule that may rewrite the input: always the validator
        defaults: dict[str, Any] = {"model": model}
        for name, info in model.model_fields.items():
            if info.alias not in (None, name):
                return
            if not info.is_required():  # a required field is in every accepted body
                defaults[name] = _default(info)
            accepted = None if name in checked else _simple_check(info)
            if accepted is not None:
                self.accepts[name] = accepted
        self.view = type(f"{model.__name__}View", (Prevalidated,), defaults)

    def accept(self, data: dict[str, Any]) -> Prevalidated | None:
        """The view of ``data`` when it is valid by construction, else None (the caller
        validates it the usual way). A shape lists each key, with its value unless that
        is a free string (any other string gets the same verdict)."""
        accepts = self.accepts
        shape = []
        for name, value in data.items():
            rule = accepts.get(name)
            if rule is None:
                return None
            accepted, nullable = rule
            if accepted is _ANY_STR and type(value) is str:
                shape.append(name)
            elif value is None and nullable or type(value) in (bool, str) and (
                    accepted is not _ANY_STR and value in accepted):  # no 1 for True
                shape.append((name, value))
            else:
                return None
        key = tuple(shape)
        valid = self.shapes.get(key)
        if valid is None:
            valid = self._judge(key)
        if not valid:
            return None
        view = object.__new__(self.view)  # type: ignore[arg-type]
        view.__dict__ = data
        return view

    def _judge(self, shape: tuple[Any, ...]) -> bool:
        representative = dict((part, "x") if type(part) is str else part for part in shape)
        try:
            self.model.model_validate(representative)
            valid = True
        except ValidationError:
            valid = False
        if len(self.shapes) >= _MAX_SHAPES:
            self.shapes.clear()
        self.shapes[shape] = valid
        return valid


def _simple_check(info: Any) -> tuple[Any, bool] | None:
    """``(what the field accepts, whether null)`` when its whole check is a type or a
    literal: a ``str`` with no constraint, a strict ``bool``, a ``Literal`` of strings."""
    annotation, nullable = info.annotation, False
    args = get_args(annotation)
    if get_origin(annotation) in (Union, UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            return None
        annotation, nullable = rest[0], True
    metadata = list(info.metadata)
    if get_origin(annotation) is Annotated:
        annotation, *extra = get_args(annotation)
        metadata += extra
    strict = [m for m in metadata if isinstance(m, Strict)]
    if len(strict) != len(metadata):
        return None  # a constraint (length, pattern, bound): the validator checks it
    if annotation is str:
        return _ANY_STR, nullable
    if annotation is bool and strict and strict[0].strict:
        return frozenset((True, False)), nullable
    if get_origin(annotation) is Literal and all(type(a) is str for a in get_args(annotation)):
        return frozenset(get_args(annotation)), nullable
    return None


class _Fresh:
    """A default made on each read (a factory's, or a copy of a mutable default), as
    each validated model gets its own. Not a data descriptor: a value the body gave, in
    the instance's ``__dict__``, wins."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return self if instance is None else self.make()


def _default(info: Any) -> Any:
    """The class attribute holding a field's default."""
    if info.default_factory is not None:
        return _Fresh(info.default_factory)
    if isinstance(info.default, (list, dict, set)):
        return _Fresh(lambda value=info.default: type(value)(value))
    return info.default
