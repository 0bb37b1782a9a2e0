"""Context length per model: the one table the compat routes read their
``max_model_len`` / ``n_ctx`` / ``max_input_tokens`` from.

A tokenizer alone has no context length; a model has one. Serving stacks report the
model's (vLLM ``max_model_len``, llama.cpp ``n_ctx``, TGI ``max_total_tokens``), and
clients size their prompts by it, so an answer of -1 (what the artifacts' missing
``model_max_length`` gave before) breaks them. The length of a request is found in
this order:

1. the model name the request asked by (its ``model``, or the ``{name}`` of a
   ``/compat/<stack>/models/{name}/`` base URL) is in ``MODELS``, or is a dated snapshot
   of one (``gpt-4o-2024-08-06`` is ``gpt-4o``'s);
2. else the artifact's ``model_max_length``, when its manifest records one (DeepSeek-V4's
   tokenizer_config.json says 1048576, its 1M-token context; an imported tokenizer
   brings its own);
3. else the tokenizer's own model in ``TOKENIZERS`` (o200k_base is gpt-4o's tokenizer
   first, so a request naming only ``o200k_base``, or nothing, gets 128000);
4. else -1: unknown (an imported tokenizer that names no model and records no length).

Values are the providers' published context windows (input + output tokens): OpenAI's
model pages for the GPT and o-series models and the legacy completion models,
``max_position_embeddings`` of openai/gpt-oss-20b and -120b's config.json (131072),
GPT-2's ``n_positions`` (1024), and that of the Hugging Face config.json of each bundled
SentencePiece-family model (Mistral 7B v0.3: 32768; Phi-3-mini-4k: 4096; Phi-3-mini-128k
and Phi-3.5-mini: 131072).
"""

from __future__ import annotations

import re
from typing import Any

#: model name -> context length in tokens (prompt and completion together)
MODELS: dict[str, int] = {
    # o200k_base
    "gpt-5": 400_000, "gpt-5-mini": 400_000, "gpt-5-nano": 400_000,
    "gpt-4.1": 1_047_576, "gpt-4.1-mini": 1_047_576, "gpt-4.1-nano": 1_047_576,
    "gpt-4.5-preview": 128_000,
    "gpt-4o": 128_000, "gpt-4o-mini": 128_000, "chatgpt-4o-latest": 128_000,
    "o1": 200_000, "o1-mini": 128_000, "o1-preview": 128_000, "o1-pro": 200_000,
    "o3": 200_000, "o3-mini": 200_000, "o3-pro": 200_000, "o4-mini": 200_000,
    # cl100k_base
    "gpt-4": 8_192, "gpt-4-0613": 8_192, "gpt-4-0314": 8_192,
    "gpt-4-32k": 32_768, "gpt-4-32k-0613": 32_768, "gpt-4-32k-0314": 32_768,
    "gpt-4-turbo": 128_000, "gpt-4-turbo-preview": 128_000, "gpt-4-1106-preview": 128_000,
    "gpt-4-0125-preview": 128_000, "gpt-4-vision-preview": 128_000,
    "gpt-3.5-turbo": 16_385, "gpt-3.5-turbo-0125": 16_385, "gpt-3.5-turbo-1106": 16_385,
    "gpt-3.5-turbo-16k": 16_385, "gpt-3.5-turbo-0613": 4_096,
    "gpt-3.5-turbo-instruct": 4_096,
    "davinci-002": 16_384, "babbage-002": 16_384,
    "text-embedding-ada-002": 8_191, "text-embedding-3-small": 8_191,
    "text-embedding-3-large": 8_191,
    # p50k_base, p50k_edit, r50k_base
    "text-davinci-003": 4_097, "text-davinci-002": 4_097, "code-davinci-002": 8_001,
    "text-davinci-001": 2_049, "text-curie-001": 2_049, "text-babbage-001": 2_049,
    "text-ada-001": 2_049, "davinci": 2_049, "curie": 2_049, "babbage": 2_049, "ada": 2_049,
    # gpt2
    "gpt2": 1_024, "gpt-2": 1_024,
    # o200k_harmony
    "openai/gpt-oss-20b": 131_072, "openai/gpt-oss-120b": 131_072,
    "gpt-oss-20b": 131_072, "gpt-oss-120b": 131_072,
    # mistral-v0.3
    "mistralai/Mistral-7B-Instruct-v0.3": 32_768, "mistralai/Mistral-7B-v0.3": 32_768,
    # phi-3-mini
    "microsoft/Phi-3-mini-4k-instruct": 4_096, "microsoft/Phi-3-mini-128k-instruct": 131_072,
    "microsoft/Phi-3.5-mini-instruct": 131_072,
}

#: tokenizer name -> the model whose length a request naming only the tokenizer gets
TOKENIZERS: dict[str, str] = {
    "o200k_base": "gpt-4o", "o200k_harmony": "openai/gpt-oss-20b",
    "cl100k_base": "gpt-4", "p50k_base": "text-davinci-003",
    "p50k_edit": "text-davinci-003", "r50k_base": "davinci", "gpt2": "gpt2",
    "mistral-v0.3": "mistralai/Mistral-7B-Instruct-v0.3",
    "phi-3-mini": "microsoft/Phi-3-mini-4k-instruct",
}

_SNAPSHOT = re.compile(r"^(.+)-\d{4}-\d{2}-\d{2}$")  # gpt-4o-2024-08-06

UNKNOWN = -1


def model_length(name: str | None) -> int | None:
    """The table's length for a model name (or a dated snapshot of one), else None."""
    if not name:
        return None
    length = MODELS.get(name)
    if length is None and (snapshot := _SNAPSHOT.match(name)):
        length = MODELS.get(snapshot.group(1))
    return length


def context_length(entry: Any, asked: str | None = None) -> int:
    """The context length for a request served by ``entry`` (a registry ``Entry``) and
    asked by the model name ``asked`` (None: by tokenizer name, or not at all)."""
    length = model_length(asked)
    if length is not None:
        return length
    recorded = entry.manifest.get("model_max_length")
    if type(recorded) is int and recorded > 0:
        return recorded
    return model_length(TOKENIZERS.get(entry.name)) or UNKNOWN
