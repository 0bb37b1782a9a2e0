"""The compat routes keep the contract's size limits (issue 33): a text over
``max_text_chars``, a batch over ``max_batch`` and ids over ``max_decode_ids`` are 413,
each in its stack's own error shape, as ``/encode`` and ``/decode`` refuse them."""

from __future__ import annotations

import pytest

from tokserve.service.operations.compat import llamacpp, sglang, tgi, vllm
from tokserve.service.runtime.settings import Settings

LONG = "a" * 101

CASES = [
    (vllm, "tokenize", {"prompt": LONG}),
    (vllm, "tokenize", {"messages": [{"role": "user", "content": LONG}]}),
    (vllm, "detokenize", {"tokens": [1] * 11}),
    (sglang, "tokenize", {"prompt": LONG}),
    (sglang, "tokenize", {"prompt": ["a"] * 5}),
    (sglang, "detokenize", {"tokens": [1] * 11}),
    (sglang, "detokenize", {"tokens": [[1]] * 5}),
    (sglang, "detokenize", {"tokens": [[1] * 6, [1] * 6]}),
    (llamacpp, "tokenize", {"content": LONG}),
    (llamacpp, "detokenize", {"tokens": [1] * 11}),
    (llamacpp, "apply-template", {"messages": [{"role": "user", "content": LONG}]}),
    (tgi, "tokenize", {"inputs": LONG}),
    (tgi, "chat_tokenize", {"model": "deepseek-v4",
                            "messages": [{"role": "user", "content": LONG}]}),
]


@pytest.fixture(scope="module")
def small_limits(live_server):
    settings = Settings(_env_file=None, max_text_chars=100, max_batch=4, max_decode_ids=10)
    with live_server(settings) as srv:
        yield srv


@pytest.mark.parametrize("stack, path, body", CASES,
                         ids=[f"{m.DIALECT.name}-{p}-{i}" for i, (m, p, _) in enumerate(CASES)])
def test_compat_limits_are_the_contracts(small_limits, stack, path, body):
    r = small_limits.client.post(f"/compat/{stack.DIALECT.name}/{path}", json=body)
    assert r.status_code == 413, r.text[:300]
    stack.DIALECT.error_model.model_validate_json(r.content)  # the stack's error shape
    assert "TOKSERVE_MAX_" in r.text


def test_compat_limits_let_what_fits_through(small_limits):
    client = small_limits.client
    assert client.post("/compat/vllm/tokenize", json={"prompt": "a" * 100}).status_code == 200
    assert client.post("/compat/sglang/tokenize", json={"prompt": ["a"] * 4}).status_code == 200
    assert client.post("/compat/sglang/detokenize",
                       json={"tokens": [[1] * 5, [1] * 5]}).status_code == 200
