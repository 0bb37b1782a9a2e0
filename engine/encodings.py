"""tiktoken's module-level functions: ``get_encoding``, ``encoding_for_model`` and friends.

``get_encoding`` keeps one ``Encoding`` per name for the life of the process (tiktoken's
contract: a second call returns the same object and reads no file), so callers may call
it on every request. It takes what ``tokserve.load`` takes: a bundled name
(``o200k_base``), ``name@version``, an artifact directory or a tokenizer file path.
Every encoding tiktoken registers is bundled, the GPT-2-era ones (gpt2, r50k_base,
p50k_base, p50k_edit) included, so none needs a download.
"""

from __future__ import annotations

import threading
from functools import partial

from .encoding import Encoding
from .errors import ArtifactError
from .loading import load as _load
from .model_table import manifest_aliases, resolve_model
from .versions import bundled_names, bundled_root

_ENCODINGS: dict[str, Encoding] = {}
_LOCK = threading.Lock()


def get_encoding(encoding_name: str) -> Encoding:
    """The ``Encoding`` for a name or path, loaded once per process.

    Raises:
        ValueError: not a string, or nothing loadable by that name (the message lists
            what is available).
    """
    if not isinstance(encoding_name, str):
        raise ValueError(f"Expected a string in get_encoding, got {type(encoding_name)}")
    enc = _ENCODINGS.get(encoding_name)
    if enc is not None:
        return enc
    with _LOCK:
        enc = _ENCODINGS.get(encoding_name)
        if enc is None:
            try:
                tokenizer = _load(encoding_name)
            except ArtifactError as e:
                raise ValueError(f"Unknown encoding {encoding_name}: {e.message}") from e
            enc = _ENCODINGS[encoding_name] = Encoding.from_tokenizer(
                tokenizer, reopen=partial(get_encoding, encoding_name))
        return enc


def list_encoding_names() -> list[str]:
    """The bundled tokenizer names, each of which ``get_encoding`` loads."""
    return bundled_names()


def encoding_name_for_model(model_name: str) -> str:
    """The tokenizer name a model uses: tiktoken's table, then the ``models`` that
    bundled artifacts declare (see ``tokserve.model_table``).

    Raises:
        KeyError: the name is not recognised (tiktoken's exception and advice).
    """
    name = resolve_model(model_name, manifest_aliases([bundled_root()]))
    if name is None:
        raise KeyError(
            f"Could not automatically map {model_name} to a tokeniser. "
            "Please use `tokserve.get_encoding` to explicitly get the tokeniser you expect."
        )
    return name


def encoding_for_model(model_name: str) -> Encoding:
    """``get_encoding(encoding_name_for_model(model_name))``."""
    return get_encoding(encoding_name_for_model(model_name))
