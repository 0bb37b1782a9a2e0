"""``tiktoken.model`` under the shim: model name -> encoding, by tiktoken's table only.

``MODEL_TO_ENCODING`` (exact names) and ``MODEL_PREFIX_TO_ENCODING`` (prefixes, tried in
order) are copies of the table in ``models.json`` (the one the engine and the service
use, checked equal to tiktoken's). They are this module's own dicts and are read on every
call, so code that registers a model the tiktoken way
(``tiktoken.model.MODEL_TO_ENCODING["my-model"] = "cl100k_base"``) works, and the engine's
table is not changed by it. Unlike ``tokserve.encoding_name_for_model``, the model names
artifact manifests declare are not consulted: code written for tiktoken may rely on the
``KeyError`` for a name tiktoken does not know (and fall back to an encoding of its own).
"""

from __future__ import annotations

from ..encoding import Encoding
from ..model_table import tiktoken_table
from .registry import get_encoding

MODEL_TO_ENCODING: dict[str, str] = dict(tiktoken_table()[0])
MODEL_PREFIX_TO_ENCODING: dict[str, str] = dict(tiktoken_table()[1])


def encoding_name_for_model(model_name: str) -> str:
    """The encoding name of a model: an exact name first, then the first prefix.

    Raises:
        KeyError: the name is not recognised (tiktoken's message).
    """
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for model_prefix, encoding_name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(model_prefix):
            return encoding_name
    raise KeyError(
        f"Could not automatically map {model_name} to a tokeniser. "
        "Please use `tiktoken.get_encoding` to explicitly get the tokeniser you expect."
    ) from None


def encoding_for_model(model_name: str) -> Encoding:
    """``get_encoding(encoding_name_for_model(model_name))``.

    Raises:
        KeyError: the name is not recognised.
    """
    return get_encoding(encoding_name_for_model(model_name))
