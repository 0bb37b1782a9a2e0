"""Recorded requests for the compat routes' discovery routes, the TEI base and every
per-model base URL (``/compat/<stack>/models/{name}/...``), added to
tests/service/test_openapi.py's ``RECORDED``: each real response must validate against
the schema the OpenAPI document gives for its status.

Rows: (method, documented path, concrete path, json body, headers, expected status).
"""

from __future__ import annotations

CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]

_M = "/compat/{stack}/models/{name}/"


def _m(stack: str, route: str) -> str:
    return _M.format(stack=stack, name="{name}") + route


COMPAT_RECORDED = [
    # ---- TEI
    ("POST", "/compat/tei/tokenize", "/compat/tei/tokenize",
     {"inputs": ["a b", "東京"], "model": "deepseek-v4"}, None, 200),
    ("POST", "/compat/tei/tokenize", "/compat/tei/tokenize", {"inputs": []}, None, 400),
    ("POST", "/compat/tei/tokenize", "/compat/tei/tokenize", {"inputs": 1}, None, 422),
    ("POST", "/compat/tei/tokenize", "/compat/tei/tokenize", {"inputs": "a" * 50_001},
     None, 413),
    ("POST", "/compat/tei/decode", "/compat/tei/decode", {"ids": [[64], [1, 2]]}, None, 200),
    ("POST", "/compat/tei/decode", "/compat/tei/decode", {"ids": [10**9]}, None, 422),
    ("POST", _m("tei", "tokenize"), "/compat/tei/models/gpt-4o/tokenize", {"inputs": "x"},
     None, 200),
    ("POST", _m("tei", "tokenize"), "/compat/tei/models/nope/tokenize", {"inputs": "x"},
     None, 404),
    ("POST", _m("tei", "decode"), "/compat/tei/models/gpt-4o/decode", {"ids": [64]}, None, 200),
    # ---- per-model POST routes
    ("POST", _m("vllm", "tokenize"), "/compat/vllm/models/openai%2Fgpt-oss-20b/tokenize",
     {"prompt": "hi"}, None, 200),
    ("POST", _m("vllm", "tokenize"), "/compat/vllm/models/nope/tokenize", {"prompt": "hi"},
     None, 404),
    ("POST", _m("vllm", "tokenize"), "/compat/vllm/models/gpt-4o/tokenize",
     {"prompt": "hi", "model": "deepseek-v4"}, None, 400),
    ("POST", _m("vllm", "detokenize"), "/compat/vllm/models/gpt-4o/detokenize",
     {"tokens": [1, 2]}, None, 200),
    ("POST", _m("vllm", "v1/chat/completions/render"),
     "/compat/vllm/models/deepseek-v4/v1/chat/completions/render", {"messages": CHAT},
     None, 200),
    ("POST", _m("sglang", "tokenize"), "/compat/sglang/models/gpt-4o/tokenize",
     {"prompt": ["a", "b"]}, None, 200),
    ("POST", _m("sglang", "tokenize"), "/compat/sglang/models/nope/tokenize",
     {"prompt": "a"}, None, 404),
    ("POST", _m("sglang", "v1/tokenize"), "/compat/sglang/models/gpt-4o/v1/tokenize",
     {"prompt": "a"}, None, 200),
    ("POST", _m("sglang", "detokenize"), "/compat/sglang/models/gpt-4o/detokenize",
     {"tokens": [64]}, None, 200),
    ("POST", _m("sglang", "v1/detokenize"), "/compat/sglang/models/gpt-4o/v1/detokenize",
     {"tokens": [[64]]}, None, 200),
    ("POST", _m("llamacpp", "tokenize"), "/compat/llamacpp/models/gpt-4o/tokenize",
     {"content": "hi", "with_pieces": True}, None, 200),
    ("POST", _m("llamacpp", "tokenize"), "/compat/llamacpp/models/nope/tokenize",
     {"content": "hi"}, None, 404),
    ("POST", _m("llamacpp", "detokenize"), "/compat/llamacpp/models/gpt-4o/detokenize",
     {"tokens": [64]}, None, 200),
    ("POST", _m("llamacpp", "apply-template"),
     "/compat/llamacpp/models/deepseek-v4/apply-template", {"messages": CHAT}, None, 200),
    ("POST", _m("tgi", "tokenize"), "/compat/tgi/models/gpt-4o/tokenize", {"inputs": "hi"},
     None, 200),
    ("POST", _m("tgi", "tokenize"), "/compat/tgi/models/nope/tokenize", {"inputs": "hi"},
     None, 404),
    ("POST", _m("tgi", "chat_tokenize"), "/compat/tgi/models/deepseek-v4/chat_tokenize",
     {"messages": CHAT}, None, 200),
    ("POST", _m("tgi", "chat_tokenize"), "/compat/tgi/models/deepseek-v4/chat_tokenize",
     {"messages": CHAT, "chat_template": "{{ 1 }}"}, None, 422),
    # ---- discovery routes, plain and per model
    ("GET", "/compat/vllm/tokenizer_info", "/compat/vllm/tokenizer_info", None, None, 200),
    ("GET", _m("vllm", "tokenizer_info"), "/compat/vllm/models/deepseek-v4/tokenizer_info",
     None, None, 200),
    ("GET", _m("vllm", "tokenizer_info"), "/compat/vllm/models/nope/tokenizer_info",
     None, None, 404),
    ("GET", "/compat/vllm/v1/models", "/compat/vllm/v1/models", None, None, 200),
    ("GET", _m("vllm", "v1/models"), "/compat/vllm/models/gpt-4o/v1/models", None, None, 200),
    ("GET", "/compat/vllm/health", "/compat/vllm/health", None, None, 200),
    ("GET", _m("vllm", "health"), "/compat/vllm/models/gpt-4o/health", None, None, 200),
    ("GET", _m("vllm", "health"), "/compat/vllm/models/nope/health", None, None, 404),
    ("GET", "/compat/sglang/get_model_info", "/compat/sglang/get_model_info", None, None, 200),
    ("GET", _m("sglang", "get_model_info"), "/compat/sglang/models/gpt-4o/get_model_info",
     None, None, 200),
    ("GET", "/compat/sglang/v1/models", "/compat/sglang/v1/models", None, None, 200),
    ("GET", _m("sglang", "v1/models"), "/compat/sglang/models/nope/v1/models", None, None, 404),
    ("GET", "/compat/sglang/health", "/compat/sglang/health", None, None, 200),
    ("GET", _m("sglang", "health"), "/compat/sglang/models/gpt-4o/health", None, None, 200),
    ("GET", "/compat/llamacpp/props", "/compat/llamacpp/props", None, None, 200),
    ("GET", _m("llamacpp", "props"), "/compat/llamacpp/models/deepseek-v4/props",
     None, None, 200),
    ("GET", _m("llamacpp", "props"), "/compat/llamacpp/models/nope/props", None, None, 404),
    ("GET", "/compat/llamacpp/health", "/compat/llamacpp/health", None, None, 200),
    ("GET", _m("llamacpp", "health"), "/compat/llamacpp/models/gpt-4o/health",
     None, None, 200),
    ("GET", "/compat/tgi/info", "/compat/tgi/info", None, None, 200),
    ("GET", _m("tgi", "info"), "/compat/tgi/models/openai%2Fgpt-oss-20b/info", None, None, 200),
    ("GET", _m("tgi", "info"), "/compat/tgi/models/nope/info", None, None, 404),
    ("GET", "/compat/tgi/health", "/compat/tgi/health", None, None, 200),
    ("GET", _m("tgi", "health"), "/compat/tgi/models/gpt-4o/health", None, None, 200),
]
