"""tiktoken's module-level functions: ``get_encoding``, ``encoding_for_model`` and friends.

``get_encoding`` keeps one ``Encoding`` per name for the life of the process (tiktoken's
contract: a second call returns the same object and reads no file), so callers may call
it on every request. It takes what ``tokserve.load`` takes: a bundled name
(``o200k_base``), ``name@version``, an artifact directory or a tokenizer file path.

tiktoken's GPT-2-era encodings are not bundled. They load from tiktoken's download cache
when a previous tiktoken run left the file there (its pinned hash checked); otherwise
asking for one raises the ``ValueError`` tiktoken raises for unknown names, saying how
to import the rank file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

from . import load as _load, bundled_names, bundled_root
from .formats import tiktoken_artifact
from .encoding import Encoding
from .presets import PRESETS
from .tokenizer import Tokenizer
from .errors import ArtifactError
from .models import manifest_aliases, resolve_model

#: tiktoken encodings whose files we do not ship (each has an import preset) -> the
#: rank file tiktoken builds it from (gpt2's encoder.json holds r50k_base's ranks).
_RANK_FILE = {"gpt2": "r50k_base.tiktoken", "r50k_base": "r50k_base.tiktoken",
              "p50k_base": "p50k_base.tiktoken", "p50k_edit": "p50k_base.tiktoken"}

#: where tiktoken downloads them from and the sha256 it pins (tiktoken_ext/openai_public.py)
_TIKTOKEN_BLOBS = {
    "r50k_base.tiktoken": (
        "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken",
        "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"),
    "p50k_base.tiktoken": (
        "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken",
        "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"),
}

_ENCODINGS: dict[str, Encoding] = {}
_LOCK = threading.Lock()


def get_encoding(encoding_name: str) -> Encoding:
    """The ``Encoding`` for a name or path, loaded once per process.

    Raises:
        ValueError: not a string, or nothing loadable by that name (the message lists
            what is available, or how to import a GPT-2-era rank file).
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
                tokenizer = _from_tiktoken_cache(encoding_name)
                if tokenizer is None:
                    raise ValueError(_unknown_message(encoding_name, e)) from e
            enc = _ENCODINGS[encoding_name] = Encoding.from_tokenizer(
                tokenizer, source=encoding_name)
        return enc


def list_encoding_names() -> list[str]:
    """The bundled tokenizer names, each of which ``get_encoding`` loads."""
    return bundled_names()


def encoding_name_for_model(model_name: str) -> str:
    """The tokenizer name a model uses: tiktoken's table, then the ``models`` that
    bundled artifacts declare (see ``tokserve.models``).

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


def _from_tiktoken_cache(name: str) -> Tokenizer | None:
    """A GPT-2-era encoding from tiktoken's own download cache, if it holds the file.

    Machines that ran tiktoken before have the rank file in ``$TIKTOKEN_CACHE_DIR`` (or
    ``$DATA_GYM_CACHE_DIR``, or ``<tmp>/data-gym-cache``) under the SHA-1 of its URL;
    tiktoken pins its SHA-256, and so do we. Nothing is downloaded.
    """
    if name not in _RANK_FILE:
        return None
    url, sha256 = _TIKTOKEN_BLOBS[_RANK_FILE[name]]
    cache = (os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
             or os.path.join(tempfile.gettempdir(), "data-gym-cache"))
    path = Path(cache) / hashlib.sha1(url.encode()).hexdigest()
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != sha256:
        return None
    preset = PRESETS[name]
    return Tokenizer(tiktoken_artifact(data, name=name, pattern=preset.pattern,
                                       special_tokens=dict(preset.special_tokens),
                                       eos_token=preset.eos_token))


def _unknown_message(name: str, error: ArtifactError) -> str:
    if name in _RANK_FILE:
        return (
            f"Unknown encoding {name}: tokserve does not bundle the GPT-2-era encodings. "
            f"Import its rank file once, then load it by path or serve it:\n"
            f"    tokserve artifact import {_RANK_FILE[name]} --preset {name} --name {name} "
            f"--version 1 --out ARTIFACTS_DIR\n"
            f"    tokserve.get_encoding('ARTIFACTS_DIR/{name}')  # or serve --artifacts "
            f"ARTIFACTS_DIR"
        )
    return f"Unknown encoding {name}: {error.message}"
