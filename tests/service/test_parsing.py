"""The parser's quick path (a body of strings, flags and literals taken without the
validator) answers exactly as validation does, on every request model that opts in."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from pydantic import BaseModel, ValidationError

from tokserve.service.errors import InvalidRequest
from tokserve.service.operations.parsing import Prevalidated, parse_json
from tokserve.service.operations.schemas import (CountRequest, DecodeRequest, EncodeRequest,
                                                RenderChatRequest)
from tokserve.service.operations.streaming import StreamMessage

MODELS = [EncodeRequest, CountRequest, DecodeRequest, RenderChatRequest, StreamMessage]

# Values that pass some field's check and fail others': free strings, the literals the
# models use, flags, and what JSON clients mistype (numbers, null, containers).
VALUES = ["", "x", "o200k_base", "reject", "allow", "text", "char", "utf16", "byte",
          "right", "left", "replace", "strict", "escape", "drop_oldest", "true",
          True, False, None, 0, 1, 1.0, [], ["a"], [1], {}, {"role": "user"}]


def _json_integers(value: Any) -> Any:
    """An integer field as JSON reads it: ``1.0`` is the integer 1 (docs/SERVICE.md), which
    pydantic's strict ints would refuse."""
    if type(value) is float and value.is_integer():
        return int(value)
    return [_json_integers(v) for v in value] if isinstance(value, list) else value


def _reference(model: type[BaseModel], body: dict[str, Any]) -> Any:
    schema = model.model_json_schema()["properties"]
    body = {k: _json_integers(v) if '"integer"' in json.dumps(schema.get(k, {})) else v
            for k, v in body.items()}
    try:
        req = model.model_validate(body)
    except ValidationError:
        return "invalid"
    return {name: getattr(req, name) for name in model.model_fields}, req.model_fields_set


def _ours(model: type[BaseModel], body: dict[str, Any]) -> Any:
    try:
        req = parse_json(orjson.dumps(body), model)
    except InvalidRequest:
        return "invalid"
    return {name: getattr(req, name) for name in model.model_fields}, req.model_fields_set


def _bodies(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    keys = st.sampled_from([*model.model_fields, "unknown"])
    return st.dictionaries(keys, st.sampled_from(VALUES), max_size=5)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_quick_path_answers_as_validation_does(model: type[BaseModel]) -> None:
    @settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_bodies(model))
    @example({"max_tokens": 1.0, "texts": []})  # found once: JSON's integer 1.0 (1 both ways)
    def check(body: dict[str, Any]) -> None:
        assert _ours(model, body) == _reference(model, body), body

    check()


@pytest.mark.parametrize("body", [
    {"text": "hi"},
    {"text": "hi", "tokenizer": "o200k_base", "special_tokens": "allow"},
    {"text": "hi", "model": "gpt-4o", "add_special_tokens": True, "tokenizer": None},
])
def test_plain_bodies_take_the_quick_path(body: dict[str, Any]) -> None:
    req = parse_json(orjson.dumps(body), CountRequest)
    assert isinstance(req, Prevalidated)
    assert _ours(CountRequest, body) == _reference(CountRequest, body)


@pytest.mark.parametrize("body", [
    {"texts": ["a", "b"]},            # a list: the validator checks its items
    {"text": "hi", "max_tokens": 3},  # a bounded integer
    {"text": "hi", "model": "gpt-4o", "tokenizer": "o200k_base"},  # a rule says no
    {"text": "hi", "special_tokens": "sometimes"},  # not one of the literals
])
def test_other_bodies_are_validated(body: dict[str, Any]) -> None:
    try:
        req = parse_json(orjson.dumps(body), CountRequest)
    except InvalidRequest:
        return
    assert isinstance(req, CountRequest)


def test_defaults_of_a_view_are_fresh_per_request() -> None:
    one = parse_json(b'{"text": "a"}', CountRequest)
    two = parse_json(b'{"text": "b"}', CountRequest)
    assert isinstance(one, Prevalidated)
    assert one.template_kwargs == {} and one.template_kwargs is not two.template_kwargs
